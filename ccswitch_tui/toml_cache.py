"""TOML read through a cache of what it parsed to, so that a launch loads no TOML parser.

Every launch reads its profile (and a Codex launch the ``config.toml`` ccs writes for it); the
standard library's parser costs a launch more to import than to run. Only ccs's own texts go
through the cache (profiles hold key ids, never keys): a user's or a repository's file may hold
secrets, and a copy of it would be one more place they are on disk. A text this cache has seen is looked up by its
SHA-256 in ``state/cache/toml/`` (one small JSON file a text, written when the text was first
parsed) and returned without the parser. The key is the whole text, so an edited file is simply
a new text: nothing is ever stale. A cache file counts only when it is a regular file of this
user's that nobody else can write (the folder is made private): a planted one would otherwise
choose a launch's endpoint. A text whose values JSON cannot hold as they are (TOML's dates and
times) is not cached. Whatever goes wrong with the cache (a damaged file, a full disk, a folder
that cannot be made) only means the text is parsed again.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from ccswitch_tui.safe_read import tomllib_module

KEEP = 512  # cached texts; past this, the oldest go (a text is a few hundred bytes)
_MAX = 1 << 20  # bytes: a cached file larger than this is not one ccs wrote for a profile


class TomlSyntaxError(ValueError):
    """Not valid TOML: the parser's message (with its line and column)."""


class TomlTooDeep(ValueError):
    """Nested deeper than the parser can follow."""


def loads(text: str, cache: Path | None = None, *, store: bool = True) -> dict[str, Any]:
    """``tomllib.loads(text)``, through the cache folder ``cache`` when one is given (``store``: a
    text met here for the first time is added; without it, only looked up). Raises
    ``TomlSyntaxError`` or ``TomlTooDeep`` for a text the parser refuses."""
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:48] if cache is not None else ""
    if cache is not None:
        hit = _cached(cache / f"{key}.json")
        if hit is not None:
            return hit
    tomllib = tomllib_module()
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except RecursionError:
        raise TomlTooDeep("nested too deeply") from None
    except tomllib.TOMLDecodeError as exc:
        raise TomlSyntaxError(str(exc)) from None
    if cache is not None and store and _plain(data):
        _store(cache, key, data)
    return data


def _cached(path: Path) -> dict[str, Any] | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022 or st.st_size > _MAX:
            return None
        data = json.loads(os.read(fd, _MAX + 1))
    except (OSError, ValueError, RecursionError):
        return None
    finally:
        os.close(fd)
    return data if isinstance(data, dict) else None


def _plain(value: object, depth: int = 0) -> bool:
    """Whether JSON gives ``value`` back as it is (TOML's dates and times it does not)."""
    if depth > 64:
        return False
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v, depth + 1) for v in value)
    return isinstance(value, (str, int, float, bool))


def _store(cache: Path, key: str, data: dict[str, Any]) -> None:
    tmp = cache / f".{key}.{os.getpid()}.tmp"
    try:
        cache.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(cache)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            return  # not a folder of this user's alone: nothing is cached in it
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        finally:
            os.close(fd)
        os.replace(tmp, cache / f"{key}.json")  # whole or not at all; a cache needs no fsync
        _prune(cache)
    except (OSError, ValueError):
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _prune(cache: Path) -> None:
    entries = [e for e in os.scandir(cache) if e.name.endswith(".json")]
    if len(entries) <= KEEP:
        return
    entries.sort(key=lambda e: e.stat(follow_symlinks=False).st_mtime_ns)
    for entry in entries[:len(entries) - KEEP * 3 // 4]:
        try:
            os.unlink(entry.path)
        except OSError:
            pass
