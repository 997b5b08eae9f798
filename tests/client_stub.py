"""A stand-in for any client: installed by tests/conformance_flows.py as ``FOLDER/PROGRAM`` (the name a
spec's ``program`` says), it does what every client does and nothing particular to one.

- ``--version``: prints the version ``FOLDER/stub.json`` names (the spec's pin) and exits.
- otherwise: writes what it got to ``FOLDER/calls/PID.json`` (argv, environment, working folder, and
  the files it can see: those its arguments and variables name, and the folders they name, a few
  levels down), then sends one request, as the client would, to the first loopback URL it finds
  there (variables, then arguments, then files) with ``stub.json``'s path and model, carrying the
  value of the first of ``stub.json``'s secret variables it holds; the answer's status is recorded.
- ``stub-wait`` among its arguments: before exiting, waits until ``FOLDER/release`` exists (a
  running client for ``ps`` and ``inspect``).

Its instructions come from the file beside it, never from its environment: the environment is what
ccs built, and the test judges it as it is."""

from __future__ import annotations

import json
import os
import re
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent  # the folder it was installed in (stub.json, calls/, release)
_LOOPBACK_URL = re.compile(r"http://127\.0\.0\.1:\d+(?:/[A-Za-z0-9._~/-]*)?")
_MAX_FILES, _MAX_BYTES, _DEPTH = 300, 256_000, 4


def seen_files(argv: list[str], env: dict[str, str], cwd: Path) -> dict[str, str]:
    """path → text of the files its arguments and variables name (and of the folders they name)."""
    roots: list[Path] = [cwd]
    for value in [*argv, *env.values()]:
        for part in value.split(os.pathsep) if value.count(os.pathsep) and value.startswith("/") else [value]:
            if part.startswith("/") and "\n" not in part and len(part) < 4096:
                roots.append(Path(part))
    out: dict[str, str] = {}

    def read(path: Path) -> None:
        if len(out) >= _MAX_FILES or str(path) in out:
            return
        try:
            if path.is_file() and path.stat().st_size <= _MAX_BYTES:
                out[str(path)] = path.read_bytes().decode("utf-8", "replace")
        except OSError:
            pass

    def walk(folder: Path, depth: int) -> None:
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            return
        for entry in entries:
            if entry.is_symlink():
                continue
            if entry.is_dir() and depth < _DEPTH and entry.name not in ("calls", "node_modules", ".git"):
                walk(entry, depth + 1)
            elif entry.is_file():
                read(entry)

    for root in roots:
        if root.is_file():
            read(root)
        elif root.is_dir() and root != Path("/") and not str(root).startswith(("/usr", "/bin", "/lib", "/proc")):
            walk(root, 0 if root != cwd else _DEPTH - 1)
    return out


def request(texts: list[str], plan: dict, env: dict[str, str]) -> dict:
    url = next((m.group(0) for text in texts for m in _LOOPBACK_URL.finditer(text)), None)
    if url is None:
        return {"url": None}
    credential = next((env[n] for n in plan.get("secret_names", ()) if env.get(n)), "")
    body = {"model": plan.get("model"), "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8,
            "stream": False}
    target = url.rstrip("/") + plan.get("path", "/chat/completions")
    req = urllib.request.Request(target, json.dumps(body).encode(), method="POST", headers={
        "content-type": "application/json", "authorization": f"Bearer {credential}", "x-api-key": credential,
        "x-goog-api-key": credential})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, never a proxy
    try:
        with opener.open(req, timeout=20) as resp:
            return {"url": target, "status": resp.status}
    except urllib.error.HTTPError as exc:
        return {"url": target, "status": exc.code}
    except OSError as exc:
        return {"url": target, "status": None, "error": str(exc)}


def main() -> int:
    plan = json.loads((HERE / "stub.json").read_text())
    argv = sys.argv[1:]
    if "--version" in argv:
        print(f"{plan.get('program', 'stub')} {plan.get('version', '0.0.0')}")
        return 0
    env = dict(os.environ)
    cwd = Path.cwd()
    files = seen_files(argv, env, cwd)
    call = {"pid": os.getpid(), "argv": [sys.argv[0], *argv], "env": env, "cwd": str(cwd), "files": files}
    call["request"] = request([*env.values(), *argv, *files.values()], plan, env)
    calls = HERE / "calls"
    calls.mkdir(exist_ok=True)
    tmp = calls / f".{os.getpid()}.json"
    tmp.write_text(json.dumps(call))
    tmp.rename(calls / f"{os.getpid()}.json")  # whole, or not there
    if "stub-wait" in argv:
        deadline = time.monotonic() + 120
        while not (HERE / "release").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    return 0


if __name__ == "__main__":
    sys.exit(main())
