"""What the tests of the real pinned clients (test_new_clients.py, test_kilo.py, test_qwen.py) do alike
around a launch: write a profile and store its key in the real keyring, find a client's state folder,
and check that the key reached no file there. What each checks of its own client stays in its file."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ccswitch_tui.errors import ProfileError
from ccswitch_tui.profiles.schema import profile_from_data


def profile_path(name: str = "p") -> Path:
    return Path(os.environ["CCS_HOME"]) / "profiles" / f"{name}.toml"


def write_profile(ccs, env: dict[str, str], text: str, key_id: str, key: str, name: str = "p") -> Path:
    """The profile ``name`` as ``text``; its key stored under ``key_id`` (not for an ``env:`` key)."""
    path = profile_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if not key_id.startswith("env:"):
        r = ccs("key", "set", key_id, input=key, env=env)
        assert r.returncode == 0, r.stderr
    return path


def tool_dir(tool: str, name: str = "p") -> Path:
    """The state folder ccs keeps for ``tool`` under profile ``name``."""
    return Path(os.environ["CCS_HOME"]) / "state" / "tools" / name / tool


def files_under(path: Path) -> list[Path]:
    return [p for p in path.rglob("*") if p.is_file() and not p.is_symlink()]


def assert_key_in_no_file(key: str, *roots: Path) -> None:
    """No file below ``roots`` holds ``key``, in any of its bytes."""
    for root in roots:
        for f in files_under(root):
            try:
                assert key.encode() not in f.read_bytes(), f
            except OSError:
                continue


# A profile's head for these tests: the stub provider at {url}, its key under {key_id} (the client's
# tables follow).
PROVIDER = 'schema = 1\n[provider]\nname = "Stub"\nbase_url = "{url}"\nkey = "{key_id}"\n\n'


def profile_data(base_url: str = "https://gw.example/api", **tables: Any) -> dict[str, Any]:
    """A profile's data (as read from its file) with these client tables."""
    return {"schema": 1, "provider": {"name": "P", "base_url": base_url, "key": "gw"}, **tables}


def assert_each_refused(cases: list[tuple[dict[str, Any], str, str]], data: Callable[..., dict[str, Any]],
                        never: str | None = None) -> None:
    """Each (tables, message, field): the profile with those tables is refused with the message, the
    error names the field (the editor points at it without reading the message), and ``never`` (a
    secret in the tables) is not in it."""
    for tables, message, field in cases:
        with pytest.raises(ProfileError) as exc:
            profile_from_data("p", data(**tables))
        assert message in str(exc.value), (tables, str(exc.value))
        assert never is None or never not in str(exc.value)
        assert exc.value.field == field


def pinned_bin(client: str) -> Any:
    """The session fixture ``<client>_bin``: the folder holding the real, pinned ``client`` (scripts/install-clients.sh
    installs it; the conftest's client_bin skips, or fails under CI, without it)."""

    @pytest.fixture(scope="session", name=f"{client}_bin")
    def fixture(client_bin: Callable[[str], Path]) -> Path:
        return client_bin(client)

    return fixture


def launched(ccs, tool: str, args: tuple[str, ...], env: dict[str, str], cwd: Path | None = None,
             timeout: float = 180, record: bool = False) -> Any:
    """`ccs launch p TOOL [--record] -- ARGS` with the real client: it ran and printed the stub's reply."""
    r = ccs("launch", "p", tool, *(("--record",) if record else ()), "--", *args, env=env, cwd=cwd, timeout=timeout)
    assert r.returncode == 0, r.stderr
    assert "stub reply" in r.stdout, r.stdout[-2000:]
    return r


def recorded_launch(ccs, env: dict[str, str], good: Any, tool: str, args: tuple[str, ...], model: str,
                    key: str, timeout: float = 180) -> list[dict[str, Any]]:
    """A recorded launch of the real client: the provider got every request with the real key (the
    bridge put it back; the child held a token), the run has one record per request, each served
    the profile's model with the stub's reported usage, and no record holds the key. Its records."""
    launched(ccs, tool, args, env, timeout=timeout, record=True)
    posts = good.posts()
    assert posts and {p.headers.get("x-goog-api-key") or p.headers["authorization"] for p in posts} <= {
        key, f"Bearer {key}"}
    (manifest,) = json.loads(ccs("runs", "--json", env=env).stdout)["runs"]
    records_path = Path(os.environ["CCS_HOME"]) / "state" / "runs" / f"{manifest['launch_id']}.requests.jsonl"
    records = [json.loads(line) for line in records_path.read_text().splitlines()]
    assert len(records) == len(posts)
    for rec in records:
        assert (rec["status"], rec["model_requested"], rec["model_served"]) == (200, model, model)
        assert rec["usage_source"] == "reported" and rec["input_tokens"] == 5 and rec["output_tokens"] == 1
    assert key not in records_path.read_text()
    return records
