"""ccs's own launches, as a client's hooks see them (``tools.spec.LaunchRecords``): run manifests
read safely, whether each launch still runs, and key fingerprints with this install's salt."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ccswitch_tui.errors import UsageError
from ccswitch_tui.keys.keyring import fingerprint, load_salt
from ccswitch_tui.launch import liveness
from ccswitch_tui.paths import Paths
from ccswitch_tui.runs.manifests import load_manifests, manifest_path, read_manifest


class Launches:
    def __init__(self, paths: Paths):
        self.paths = paths
        self._salt: bytes | None = None

    def manifest(self, launch_id: str) -> Mapping[str, Any] | None:
        """The manifest of a launch id read from a process's environment (anyone's text: never a path)."""
        if not launch_id or "/" in launch_id or launch_id.startswith("."):
            return None
        try:
            return read_manifest(manifest_path(self.paths, launch_id))
        except UsageError:  # missing, a FIFO, not JSON, nested too deeply: not on record
            return None

    def manifests(self, profile: str) -> list[Mapping[str, Any]]:
        return list(load_manifests(self.paths, profile))

    def running(self, manifest: Mapping[str, Any]) -> bool:
        return liveness.state(manifest) == liveness.RUNNING

    def state(self, manifest: Mapping[str, Any]) -> str:
        return liveness.state(manifest)

    def fingerprint(self, value: str) -> str:
        if self._salt is None:
            self._salt = load_salt(self.paths)
        return fingerprint(value, self._salt)
