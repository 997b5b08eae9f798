"""Where ccs's two folders are, as plain strings: ``$CCS_HOME/profiles`` and ``$CCS_HOME/state`` when
it is set, otherwise the XDG config and state folders on Linux. The one rule, read by ``paths`` (which
wraps it in ``Paths``) and by a resident launch's client (``resident/client.py``), which asks before
anything heavier than ``os`` loads: ``pathlib`` is not needed for it."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

APP_NAME = "ccs"


def ccs_folders(environ: Mapping[str, str]) -> tuple[str, str] | None:
    """(profiles, state); None where only platformdirs knows (not Linux, no CCS_HOME)."""
    home = environ.get("CCS_HOME")
    if home:
        root = os.path.expanduser(home)
        return os.path.join(root, "profiles"), os.path.join(root, "state")
    if not sys.platform.startswith("linux"):
        return None
    user_home = environ.get("HOME") or os.path.expanduser("~")
    config = environ.get("XDG_CONFIG_HOME", "").strip() or os.path.join(user_home, ".config")
    state = environ.get("XDG_STATE_HOME", "").strip() or os.path.join(user_home, ".local", "state")
    return os.path.join(config, APP_NAME, "profiles"), os.path.join(state, APP_NAME)
