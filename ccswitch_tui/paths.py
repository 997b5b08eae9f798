"""Where ccs keeps things: ``$CCS_HOME`` when set, otherwise the XDG config and state dirs."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from ccswitch_tui.valueclass import valueclass

APP_NAME = "ccs"


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
    env = os.environ if environ is None else environ
    home = env.get("CCS_HOME")
    if home:
        root = Path(home).expanduser()
        return Paths(profiles=root / "profiles", state=root / "state")
    if sys.platform.startswith("linux"):
        # What platformdirs answers on Linux, without importing it on the launch path.
        user_home = Path(env.get("HOME") or Path.home())
        config = env.get("XDG_CONFIG_HOME", "").strip() or str(user_home / ".config")
        state = env.get("XDG_STATE_HOME", "").strip() or str(user_home / ".local" / "state")
        return Paths(profiles=Path(config) / APP_NAME / "profiles", state=Path(state) / APP_NAME)
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
