"""Profiles on disk: one TOML file each, read and written with tomlkit so comments and order survive.

Writes are atomic (temp file, fsync, rename) and serialized with a lock file beside the profiles.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .atomic import atomic_write, locked
from .errors import ProfileError, UsageError
from .paths import Paths, ensure_private_dir, resolve_paths
from .profile import Profile, check_name, profile_from_data

if TYPE_CHECKING:
    from tomlkit.toml_document import TOMLDocument


@dataclass(frozen=True)
class Entry:
    """One profile file as listed: the profile, or the error that keeps it from loading."""

    name: str
    path: Path
    profile: Profile | None = None
    error: str | None = None


def parse_toml(text: str, where: str) -> TOMLDocument:
    """Parse TOML text; a syntax error becomes ``where:line:col: message``."""
    import tomlkit
    from tomlkit.exceptions import ParseError, TOMLKitError

    try:
        return tomlkit.parse(text)
    except ParseError as exc:
        msg = str(exc).split(" at line ")[0].replace("Unexpected character: '\\x00'", "unexpected end of file")
        raise ProfileError(f"{where}:{exc.line}:{exc.col}: {msg}") from None
    except TOMLKitError as exc:  # e.g. KeyAlreadyPresent ([a] b = 1 then [a.b]), raised without a position
        raise ProfileError(f"{where}: {str(exc).rstrip('.')}") from None


def validate_text(name: str, text: str, where: str | None = None) -> tuple[TOMLDocument, Profile]:
    where = where or f"{name}.toml"
    doc = parse_toml(text, where)
    return doc, profile_from_data(name, doc.unwrap(), where)


def profile_from_text(name: str, text: str, where: str | None = None) -> Profile:
    """Validate for reading only. The standard library's parser is several times cheaper to import
    than tomlkit, which matters on the launch path; tomlkit still gives the positioned error."""
    where = where or f"{name}.toml"
    try:
        import tomllib
    except ImportError:  # Python 3.10
        return validate_text(name, text, where)[1]
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return validate_text(name, text, where)[1]  # raises with file:line:col (or accepts, as a writer would)
    return profile_from_data(name, data, where)


class Store:
    def __init__(self, paths: Paths | None = None):
        self.paths = paths or resolve_paths()

    @property
    def root(self) -> Path:
        return self.paths.profiles

    def path_for(self, name: str) -> Path:
        return self.root / f"{check_name(name)}.toml"

    def names(self) -> list[str]:
        if not self.root.is_dir():
            return []
        out = []
        for p in self.root.glob("*.toml"):
            try:
                out.append(check_name(p.stem))
            except UsageError:
                continue
        return sorted(out)

    def exists(self, name: str) -> bool:
        return self.path_for(name).is_file()

    def read_text(self, name: str) -> str:
        path = self.path_for(name)
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            if path.is_symlink():  # listed by names(), but its target is gone
                raise ProfileError(
                    f"{path}: cannot read: it links to {os.readlink(path)}, which does not exist; "
                    f"remove the link or restore its target"
                ) from None
            known = self.names()
            hint = f" (known: {', '.join(known[:8])}{'…' if len(known) > 8 else ''})" if known else ""
            raise UsageError(f"no profile named {name!r} in {self.root}{hint}; see `ccs list`") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ProfileError(f"{path}: cannot read: {exc}") from None

    def load_doc(self, name: str) -> TOMLDocument:
        return validate_text(name, self.read_text(name), str(self.path_for(name)))[0]

    def load(self, name: str) -> Profile:
        return profile_from_text(name, self.read_text(name), str(self.path_for(name)))

    def entries(self) -> list[Entry]:
        """Every profile file; a broken one is listed with its error instead of hiding the others."""
        out = []
        for name in self.names():
            path = self.path_for(name)
            try:
                out.append(Entry(name, path, profile=self.load(name)))
            except ProfileError as exc:
                out.append(Entry(name, path, error=str(exc)))
            except UsageError:  # removed since it was listed: nothing to show
                continue
        return out

    def save_text(self, name: str, text: str, *, create: bool = False) -> Profile:
        """Validate ``text`` and write it atomically; an invalid text leaves the old file whole."""
        path = self.path_for(name)
        _, profile = validate_text(name, text, str(path))
        ensure_private_dir(self.root)
        with locked(self.root / ".lock"):
            if create and path.exists():
                raise UsageError(f"profile {name!r} already exists ({path}); pick another name or `ccs edit {name}`")
            atomic_write(path, text, mode=0o600)
        return profile

    def save_doc(self, name: str, doc: TOMLDocument, *, create: bool = False) -> Profile:
        import tomlkit

        return self.save_text(name, tomlkit.dumps(doc), create=create)

    def delete(self, name: str) -> Path:
        path = self.path_for(name)
        with locked(self.root / ".lock"):
            try:
                os.unlink(path)
            except FileNotFoundError:
                raise UsageError(f"no profile named {name!r} in {self.root}; see `ccs list`") from None
        return path
