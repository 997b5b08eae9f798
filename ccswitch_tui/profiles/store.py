"""Profiles on disk: one TOML file each, read and written with tomlkit so comments and order survive.

Writes are atomic (temp file, fsync, rename) and serialized with a lock file beside the profiles.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ccswitch_tui import tools
from ccswitch_tui.atomic import atomic_write, locked
from ccswitch_tui.errors import ProfileError, UsageError
from ccswitch_tui.model import Profile
from ccswitch_tui.paths import Paths, ensure_private_dir, resolve_paths
from ccswitch_tui.profiles.schema import profile_from_data
from ccswitch_tui.safe_read import decode_error_line, parse_toml, read_text
from ccswitch_tui.tempfiles import sweep_temp_files
from ccswitch_tui.toml_cache import TomlSyntaxError, TomlTooDeep, loads
from ccswitch_tui.tools.checker import NAME_RE, check_name
from ccswitch_tui.valueclass import valueclass

if TYPE_CHECKING:
    from tomlkit.toml_document import TOMLDocument

    from ccswitch_tui.tools.registry import Registry


# every C0 control but tab and newline, DEL and C1 (NUL has its own message)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class ProfileChanged(ProfileError):
    """A read-modify-write found the file changed since it was read; nothing was written."""


@valueclass(frozen=True)
class Entry:
    """One profile file as listed: the profile, or the error that keeps it from loading."""

    name: str
    path: Path
    profile: Profile | None = None
    error: str | None = None


def validate_text(name: str, text: str, where: str | None = None,
                  registry: Registry | None = None) -> tuple[TOMLDocument, Profile]:
    """Parse with tomlkit (for a writer: comments and order kept) and validate with ``registry``
    (default: every spec)."""
    where = where or f"{name}.toml"
    doc = parse_toml(text, where)
    data = doc.unwrap()
    refuse_nul(data, where)
    return doc, profile_from_data(name, data, where, registry)


def profile_from_text(name: str, text: str, where: str | None = None, registry: Registry | None = None,
                      cache: Path | None = None) -> Profile:
    """Validate for reading only. The standard library's parser (through the ``cache`` of parsed
    texts, toml_cache.py) is several times cheaper to import than tomlkit, which matters on the
    launch path; tomlkit still gives the positioned error."""
    where = where or f"{name}.toml"
    try:
        data = loads(text, cache)
    except (TomlSyntaxError, TomlTooDeep):
        # raises with file:line:col (or accepts, as a writer would)
        return validate_text(name, text, where, registry)[1]
    refuse_nul(data, where)
    return profile_from_data(name, data, where, registry)


def refuse_nul(data: Any, where: str, path: str = "") -> None:
    """A NUL (``"\\u0000"``) in any value: no environment variable, argument or file name can carry
    it, so every launch would fail; one line naming the field instead. Any other control character
    but newline and tab (an escape, a carriage return, a C1 control) is refused the same way: a
    profile is plain text, and such a character in a value would reach a terminal or a child."""
    if isinstance(data, str):
        if "\x00" in data:
            raise ProfileError(f"{where}: {path or 'a value'} holds a NUL character (\\u0000), which no "
                               "environment variable or argument can carry; remove it")
        bad = _CONTROL.search(data)
        if bad:
            raise ProfileError(f"{where}: {path or 'a value'} holds a control character (\\u{ord(bad.group()):04x}); "
                               "remove it (a profile value is plain text: only newline and tab are allowed)")
    elif isinstance(data, dict):
        for k, v in data.items():
            refuse_nul(k, where, f"{path}{k!r}" if _CONTROL.search(str(k)) else path)
            refuse_nul(v, where, f"{path}{k}." if isinstance(v, (dict, list)) else f"{path}{k}")
    elif isinstance(data, list):
        for i, v in enumerate(data):
            refuse_nul(v, where, f"{path.rstrip('.')}[{i}]")


def unknown_hint(name: str, known: list[str]) -> str:
    """After "no profile named X": the names closest to X (a typo), else the few there are."""
    import difflib  # lazy: only an unknown name needs it, never a launch

    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    if close:
        return f"; did you mean {' or '.join(repr(c) for c in close)}? (`ccs list` shows all {len(known)})"
    if not known:
        return "; there is none yet: `ccs new NAME --preset P` makes one (`ccs presets` lists them)"
    if len(known) <= 8:
        return f" (known: {', '.join(known)}); see `ccs list`"
    return f"; none of the {len(known)} profiles is close: see `ccs list`"


class Store:
    """The profiles folder. ``registry``: the client specs profiles are read with (default: every
    spec); a write always validates every table."""

    def __init__(self, paths: Paths | None = None, registry: Registry | None = None):
        self.paths = paths or resolve_paths()
        self._registry = registry

    @property
    def registry(self) -> Registry:
        if self._registry is None:
            self._registry = tools.load()
        return self._registry

    def _writer_registry(self) -> Registry | None:
        """Every spec, for a write (None: the default, every spec)."""
        return self._registry if self._registry is not None and self._registry.complete else None

    @property
    def root(self) -> Path:
        return self.paths.profiles

    def path_for(self, name: str) -> Path:
        return self.root / f"{check_name(name)}.toml"

    def names(self) -> list[str]:
        return sorted(n for n, _ in self._files() if n is not None)

    def _files(self) -> list[tuple[str | None, Path]]:
        """(name, path) for each file that looks like a profile; the name is None when the file name
        breaks the naming rule (``UPPER.toml``, ``.hidden.toml``, ``x.TOML``)."""
        try:
            paths = [p for p in self.root.iterdir() if p.suffix.lower() == ".toml"]
        except (FileNotFoundError, NotADirectoryError):
            return []
        out: list[tuple[str | None, Path]] = []
        for p in paths:
            try:
                out.append((check_name(p.stem) if p.suffix == ".toml" else None, p))
            except UsageError:
                out.append((None, p))
        return out

    def exists(self, name: str) -> bool:
        return self.path_for(name).is_file()

    def read_text(self, name: str) -> str:
        path = self.path_for(name)
        try:
            return read_text(path)
        except FileNotFoundError:
            if path.is_symlink():  # listed by names(), but its target is gone
                raise ProfileError(
                    f"{path}: cannot read: it links to {os.readlink(path)}, which does not exist; "
                    f"remove the link or restore its target"
                ) from None
            raise UsageError(f"no profile named {name!r} in {self.root}{unknown_hint(name, self.names())}") from None
        except UnicodeDecodeError as exc:
            raise ProfileError(f"{path}: cannot read: {decode_error_line(exc)}") from None
        except OSError as exc:
            raise ProfileError(f"{path}: cannot read: {exc}") from None

    def load_doc(self, name: str) -> TOMLDocument:
        return validate_text(name, self.read_text(name), str(self.path_for(name)), self._writer_registry())[0]

    def load(self, name: str) -> Profile:
        return profile_from_text(name, self.read_text(name), str(self.path_for(name)), self.registry,
                                 self.paths.toml_cache)

    def entries(self) -> list[Entry]:
        """Every profile file; a broken one is listed with its error instead of hiding the others."""
        out = []
        for name, path in sorted(self._files(), key=lambda f: (f[1].stem, f[1].name)):  # tt before tt-b
            if name is None:
                out.append(Entry(path.name, path, error=(
                    f"{path}: not loaded: a profile file is named NAME.toml with NAME matching {NAME_RE.pattern}; "
                    f"rename it (e.g. to {path.stem.lower().lstrip('.') or 'profile'}.toml)")))
                continue
            try:
                out.append(Entry(name, path, profile=self.load(name)))
            except ProfileError as exc:
                out.append(Entry(name, path, error=str(exc)))
            except UsageError:  # removed since it was listed: nothing to show
                continue
        return out

    def save_text(self, name: str, text: str, *, create: bool = False, expected: str | None = None) -> Profile:
        """Validate ``text`` and write it atomically; an invalid text leaves the old file whole.

        ``expected``: the text this edit started from. When the file no longer holds it (someone
        saved in between), ProfileChanged is raised and nothing is written: a read-modify-write
        never drops another writer's change. The check and the write happen under one lock."""
        path = self.path_for(name)
        _, profile = validate_text(name, text, str(path), self._writer_registry())
        ensure_private_dir(self.root)
        with self.lock():
            if create and (path.exists() or path.is_symlink()):
                raise UsageError(f"profile {name!r} already exists ({path}); pick another name or `ccs edit {name}`")
            if expected is not None and self._current(path) != expected:
                if not path.exists():
                    raise ProfileChanged(f"{path} was removed since it was read")
                raise ProfileChanged(f"{path} changed on disk since it was read (another ccs or editor saved it)")
            atomic_write(path, text, mode=0o600)
        try:  # the next launch finds the text parsed (toml_cache.py): it loads no TOML parser
            loads(text, self.paths.toml_cache)
        except ValueError:
            pass
        return profile

    def _current(self, path: Path) -> str | None:
        try:
            return read_text(path)
        except (OSError, UnicodeDecodeError):
            return None

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """The lock every profile write holds; temp files left by a killed writer are swept under it."""
        ensure_private_dir(self.root)
        with locked(self.root / ".lock"):
            sweep_temp_files(self.root, suffix=".toml")
            yield

    def save_doc(self, name: str, doc: TOMLDocument, *, create: bool = False) -> Profile:
        import tomlkit  # lazy: tomlkit loads only when a profile is written

        return self.save_text(name, tomlkit.dumps(doc), create=create)

    def delete(self, name: str) -> Path:
        path = self.path_for(name)
        with self.lock():
            try:
                os.unlink(path)
            except FileNotFoundError:
                raise UsageError(f"no profile named {name!r} in {self.root}; see `ccs list`") from None
        return path
