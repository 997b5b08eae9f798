"""Where ccs keeps things: ``$CCS_HOME`` when set, otherwise the XDG config and state dirs."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ccswitch_tui.folders import APP_NAME, ccs_folders
from ccswitch_tui.valueclass import valueclass


@valueclass(frozen=True)
class Paths:
    profiles: Path
    state: Path

    @property
    def runs(self) -> Path:
        return self.state / "runs"

    @property
    def salt(self) -> Path:
        return self.state / "salt"

    @property
    def shared_salt(self) -> Path:
        return self.state / "shared-salt"

    @property
    def key_index(self) -> Path:
        return self.state / "keys.json"

    @property
    def toml_cache(self) -> Path:
        return toml_cache_of(self.state)

    def tool_dir(self, profile: str, tool: str) -> Path:
        return self.state / "tools" / profile / tool

    def tool_dirs(self, profile: str, tool: str) -> tuple[Path, ...]:
        """The tool dir and its parents under ``state``, outermost first: all of them are 0700."""
        return (self.state / "tools", self.state / "tools" / profile, self.tool_dir(profile, tool))


def toml_cache_of(state: Path) -> Path:
    """What TOML texts parsed to (toml_cache.py): a launch that finds its texts here loads no parser."""
    return state / "cache" / "toml"


def resolve_paths(environ: Mapping[str, str] | None = None) -> Paths:
    found = ccs_folders(os.environ if environ is None else environ)
    if found is not None:
        return Paths(profiles=Path(found[0]), state=Path(found[1]))
    import platformdirs  # lazy: keeps platformdirs off `ccs run`'s imports

    return Paths(
        profiles=Path(platformdirs.user_config_dir(APP_NAME)) / "profiles",
        state=Path(platformdirs.user_state_dir(APP_NAME)),
    )


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` and make it 0700; parents it creates are 0700 too (``mkdir(parents=True)``
    would make them with the umask's mode)."""
    missing = []
    p = path
    while not p.exists() and p != p.parent:
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        d.mkdir(mode=0o700, exist_ok=True)
        os.chmod(d, 0o700)
    os.chmod(path, 0o700)
    return path
