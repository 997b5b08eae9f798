"""Whether a file ccs obeys from a project or parent folder is the user's own, as git's
``safe.directory`` asks of a repository: a regular file (not a link, not a FIFO), owned by the user
or root, that nobody else can write, in folders nobody else controls (owned by the user or root,
not writable by others unless sticky, as ``/tmp`` is). Anything else is named and ignored by the
caller, never obeyed and never fatal: another local user's file in a shared parent must not pick
the user's profile, and a FIFO there must not stop the user's clients.

A group-writable file or folder counts as the user's own when the group is the owner's private
group (Debian and Ubuntu give each user one, with umask 002, so every file there is group-writable).

Runs on every shim start: ``os`` and ``stat``; ``pwd`` and ``grp`` only when a message or a
group-writable bit needs them.
"""

from __future__ import annotations

import os
import stat

_KINDS = ((stat.S_ISFIFO, "FIFO"), (stat.S_ISDIR, "folder"), (stat.S_ISSOCK, "socket"),
          (stat.S_ISCHR, "device"), (stat.S_ISBLK, "device"))


class NotOwned(Exception):
    """A file or folder that is not the user's own: ``what`` it is, and the way out (``fix``)."""

    def __init__(self, path: str, what: str, fix: str):
        super().__init__(f"{path} {what}; {fix}")
        self.path = path
        self.what = what
        self.fix = fix


def owner_text(uid: int) -> str:
    """``alice (uid 1001)``, or ``uid 1001`` for a uid no account has."""
    import pwd  # lazy: only a message names an owner

    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _private_group(uid: int, gid: int) -> bool:
    """Whether ``gid`` is the private group of user ``uid``: the user's primary group, named after the
    user, with no other member."""
    import grp  # lazy: only a group-writable file asks
    import pwd  # lazy: only a group-writable file asks

    try:
        user, group = pwd.getpwuid(uid), grp.getgrgid(gid)
    except KeyError:
        return False
    return user.pw_gid == gid and group.gr_name == user.pw_name and all(m == user.pw_name for m in group.gr_mem)


def _writers(st: os.stat_result) -> str | None:
    """Who else can write a file or folder with this status: "anyone", "group NAME", or None."""
    if st.st_mode & stat.S_IWOTH:
        return "anyone"
    if st.st_mode & stat.S_IWGRP and not _private_group(st.st_uid, st.st_gid):
        import grp  # lazy: only a group-writable file asks

        try:
            return f"group {grp.getgrgid(st.st_gid).gr_name}"
        except KeyError:
            return f"group {st.st_gid}"
    return None


def _ours(uid: int) -> bool:
    return uid in (os.geteuid(), 0)


def check_folders(folder: str, checked: dict[str, str | None] | None = None) -> None:
    """Raise NotOwned (naming ``folder``'s file-to-be as ``folder``) when ``folder`` or a parent is not
    under the user's control. ``checked`` caches folder → problem across calls."""
    checked = {} if checked is None else checked
    d = os.path.realpath(folder)
    while True:
        if d not in checked:
            checked[d] = _folder_problem(d)
        if checked[d]:
            raise NotOwned(d, checked[d] or "", "")
        parent = os.path.dirname(d)
        if parent == d:
            return
        d = parent


def _folder_problem(d: str) -> str | None:
    try:
        st = os.lstat(d)
    except OSError as exc:
        return f"cannot be checked ({exc.strerror or exc})"
    if not _ours(st.st_uid):
        return f"belongs to {owner_text(st.st_uid)}"
    writers = _writers(st)
    if writers and not st.st_mode & stat.S_ISVTX:  # sticky (/tmp): others cannot replace our entries
        return f"can be written by {writers} (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def read_owned(path: str, limit: int, checked: dict[str, str | None] | None = None) -> bytes:
    """The first ``limit`` + 1 bytes of ``path`` when it is the user's own regular file in folders the
    user controls; FileNotFoundError when there is none; NotOwned (what, way out) otherwise."""
    st = os.lstat(path)  # FileNotFoundError: nothing there
    if stat.S_ISLNK(st.st_mode):
        raise NotOwned(path, "is a symbolic link (ccs reads this file only as a regular file of yours)",
                       "replace it with a file (`ccs use --here PROFILE`)")
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "special file")
        whose = "" if _ours(st.st_uid) else f" of {owner_text(st.st_uid)}"
        raise NotOwned(path, f"is a {kind}{whose}, not a regular file", "remove it (or ask its owner to)")
    if not _ours(st.st_uid):
        raise NotOwned(path, f"belongs to {owner_text(st.st_uid)}, not to you (or root)",
                       "remove it or ask its owner to; a file of your own in your project takes its place")
    writers = _writers(st)
    if writers:
        raise NotOwned(path, f"can be written by {writers} (mode {stat.S_IMODE(st.st_mode):04o})",
                       f"run `chmod go-w {path}` if it is yours")
    folder = os.path.dirname(os.path.abspath(path))
    try:
        check_folders(folder, checked)
    except NotOwned as exc:
        raise NotOwned(path, f"is in {exc.path}, which {exc.what}",
                       "keep your project in folders only you (or root) can change") from None
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) or not stat.S_ISREG(now.st_mode):
            raise NotOwned(path, "changed while being checked", "try again")
        return os.read(fd, limit + 1)
    finally:
        os.close(fd)
