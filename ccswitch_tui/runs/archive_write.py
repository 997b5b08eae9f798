"""`ccs runs export`: runs of this state folder in one archive another machine can import.

The archive is a gzip-compressed tar: ``ccs-export.json`` (the format, the exporting machine, its ccs
version, when, the id of its own fingerprint salt, and each run's files with their sha256), then
``runs/<launch-id>.json`` and, when the manifest names them, its request records
(``runs/<launch-id>.requests.jsonl``) and per-task results (``.outcomes.jsonl``). Manifests and
records are masked when they are written; the export checks it once more on the archive's own bytes
(the tar before compression) for the keys of the runs' profiles, their ``[secrets]`` values, the
fingerprint salts, in every form a secret travels in (``policy.secret_search``), and for anything
shaped like a bridge token. Finding one, it writes nothing.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import shutil
import stat
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ccswitch_tui import __version__
from ccswitch_tui.bridge.reroute import TOKEN_PREFIX
from ccswitch_tui.errors import CcsError, UsageError
from ccswitch_tui.keys.salt import SHARED_SALT_VAR, install_salt_id
from ccswitch_tui.paths import Paths
from ccswitch_tui.policy.secret_search import SecretSearch
from ccswitch_tui.runs.manifests import find_manifest, load_manifests, manifest_path
from ccswitch_tui.runs.origin import this_machine
from ccswitch_tui.safe_read import loads_json, read_text
from ccswitch_tui.valueclass import field, valueclass

if TYPE_CHECKING:
    from ccswitch_tui.keys.keyring import KeyStore
    from ccswitch_tui.profiles.store import Store

FORMAT, VERSION = "ccs-runs", 1
INDEX = "ccs-export.json"
RECORDS_SUFFIX = ".requests.jsonl"
RESULTS_SUFFIX = ".outcomes.jsonl"
# A run's files beside its manifest, each named by a field of the manifest: its request records and its
# per-task results (kept in the manifest itself by earlier versions).
SIDE_FILES = {RECORDS_SUFFIX: ("recording", "records"), RESULTS_SUFFIX: ("outcomes", "results_file")}


def side_file(m: Mapping[str, Any], suffix: str) -> Any:
    """What the manifest names as its file of this kind (None when it names none)."""
    table, key = SIDE_FILES[suffix]
    holder = m.get(table)
    return holder.get(key) if isinstance(holder, dict) else None
PIECE = 1 << 20
TOKEN_SHAPE = re.compile(re.escape(TOKEN_PREFIX).encode() + rb"[A-Za-z0-9_-]{8,}", re.IGNORECASE)


@valueclass
class Exported:
    path: Path
    runs: list[str]
    notes: list[str] = field(default_factory=list)


# --- which runs --------------------------------------------------------------------------------------------

def select(paths: Paths, ids: Sequence[str], labels: Sequence[str], since: str | None, every: bool,  # noqa: C901
           running: Callable[[Mapping[str, Any]], bool], notes: list[str]) -> list[dict[str, Any]]:
    """The runs asked for (by id, or every run with one of the labels and/or started since), oldest
    first; runs still going (``running``) are left out and named in ``notes``."""
    if not (ids or labels or since or every):
        raise UsageError("say which runs to export: launch ids, --label LABEL, --since DATE or --all")
    chosen: dict[str, dict[str, Any]] = {}
    for ref in ids:
        m = find_manifest(paths, ref)
        chosen[str(m["launch_id"])] = m
    if labels or since or every:
        for m in load_manifests(paths, problems=notes):
            if (every or not labels or m.get("label") in labels) and (since is None or str(m.get("started")) >= since):
                chosen.setdefault(str(m["launch_id"]), m)
    for label in labels:
        if not any(m.get("label") == label for m in chosen.values()):
            raise UsageError(f"no run has the label {label!r}" + (f" since {since}" if since else "")
                             + "; see `ccs runs`")
    out = []
    for lid, m in sorted(chosen.items(), key=lambda kv: (str(kv[1].get("started") or ""), kv[0])):
        if running(m):
            notes.append(f"run {lid} is still going: left out (export it once it has ended)")
            continue
        out.append(m)
    if not out:
        raise UsageError("no finished run to export among those asked for; see `ccs runs`")
    return out


# --- what must not be in the archive ---------------------------------------------------------------------

def known_secrets(paths: Paths, manifests: Iterable[Mapping[str, Any]], store: Store, keys: KeyStore,  # noqa: C901
                  environ: Mapping[str, str], notes: list[str]) -> list[tuple[str, str]]:
    """(description, value) of every secret the runs could have seen that ccs can read here: the key
    of each run's key id and profile, the profile's ``[secrets]``, the fingerprint salts."""
    refs: dict[str, str] = {}
    for m in manifests:
        if isinstance(m.get("key_id"), str) and m["key_id"]:
            refs.setdefault(m["key_id"], f"the key {m['key_id']!r}")
        profile = _profile(store, m.get("profile"))
        if profile is not None:
            refs.setdefault(profile.key_id, f"the key {profile.key_id!r}")
            for var, ref in getattr(profile, "secrets", {}).items():
                refs.setdefault(ref, f"the [secrets] value {var} of profile {profile.name!r}")
    out = []
    for ref, what in refs.items():
        try:
            value = keys.lookup(ref)
        except CcsError as exc:
            notes.append(f"the archive was not checked for {what}: it cannot be read here ({exc})")
            continue
        if value:
            out.append((what, value))
    if environ.get(SHARED_SALT_VAR, "").strip():
        out.append((f"the fingerprint salt in {SHARED_SALT_VAR}", environ[SHARED_SALT_VAR].strip()))
    for name, where in (("the stored shared salt", paths.shared_salt), ("this install's salt", paths.salt)):
        try:
            text = read_text(where, limit=4096).strip()
        except (OSError, ValueError):
            continue
        if text:
            out.append((name, text))
    return out


def _profile(store: Store, name: Any) -> Any:
    if not isinstance(name, str):
        return None
    try:
        return store.load(name)
    except CcsError:
        return None


def check_bytes(stream: IO[bytes], secrets: Iterable[tuple[str, str]]) -> None:
    """UsageError naming what was found, when ``stream`` holds a secret (in any form) or a bridge token."""
    search = SecretSearch(secrets)
    tail = b""
    stream.seek(0)
    while piece := stream.read(PIECE):
        found = search.feed(piece)
        if found is not None:
            raise UsageError(f"refusing to export: the runs hold {found.what} ({found.form}); nothing was written. "
                             "Find it with grep in the state folder's runs/ and remove those runs first")
        window = tail + piece
        if TOKEN_SHAPE.search(window):
            raise UsageError("refusing to export: the runs hold a bridge token (ccs-bridge-…); nothing was written. "
                             "Find it with grep in the state folder's runs/ and remove those runs first")
        tail = window[-64:]


# --- the archive ------------------------------------------------------------------------------------------

@valueclass(frozen=True)
class _File:
    name: str  # in runs/
    data: bytes | None = None  # a manifest, as it goes into the archive
    path: Path | None = None  # records, streamed from the state folder
    size: int = 0
    digest: str = ""


def _open_regular(path: Path) -> IO[bytes]:
    """A records file to stream: a regular file only (never a FIFO that would hang the export)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UsageError(f"{path}: not a regular file; remove it or leave its run out of the export")
    return os.fdopen(fd, "rb")


def _run_files(paths: Paths, m: Mapping[str, Any]) -> list[_File]:
    """A run's files as they go into the archive: the manifest (as JSON, without the blank space it is
    written with), then the files beside it that it names (read as they are, with their digest)."""
    lid = str(m["launch_id"])
    raw = loads_json(read_text(manifest_path(paths, lid)))
    raw["launch_id"] = lid
    data = (json.dumps(raw, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    files = [_File(f"{lid}.json", data=data, size=len(data), digest=hashlib.sha256(data).hexdigest())]
    for suffix in SIDE_FILES:
        beside = paths.runs / f"{lid}{suffix}"
        if side_file(raw, suffix) != beside.name or not beside.exists():
            continue
        digest, size = hashlib.sha256(), 0
        with _open_regular(beside) as fh:
            while piece := fh.read(PIECE):
                digest.update(piece)
                size += len(piece)
        files.append(_File(beside.name, path=beside, size=size, digest=digest.hexdigest()))
    return files


def _member(tar: tarfile.TarFile, name: str, f: _File | bytes, mtime: int) -> None:
    data = f if isinstance(f, bytes) else f.data
    info = tarfile.TarInfo(name)
    info.size = len(data) if data is not None else f.size if isinstance(f, _File) else 0
    info.mtime, info.mode = mtime, 0o600
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if data is not None:
        tar.addfile(info, io.BytesIO(data))
        return
    assert isinstance(f, _File) and f.path is not None
    with _open_regular(f.path) as fh:
        tar.addfile(info, fh)  # exactly info.size bytes: a file that grew meanwhile is cut where it was read


def export(paths: Paths, manifests: Sequence[Mapping[str, Any]], dest: Path, secrets: Sequence[tuple[str, str]],
           environ: Mapping[str, str] | None = None) -> Exported:
    """Write the archive to ``dest`` (atomically: a reader sees no archive or the whole one)."""
    machine = this_machine(environ)
    now = time.time()
    index: dict[str, Any] = {
        "format": FORMAT, "version": VERSION, "machine": machine, "ccs_version": __version__,
        "exported": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
        "install_salt": install_salt_id(paths), "runs": [],
    }
    runs = [(str(m["launch_id"]), _run_files(paths, m)) for m in manifests]
    for lid, files in runs:
        index["runs"].append({"launch_id": lid, "files": {f.name: f"sha256:{f.digest}" for f in files}})
    dest = dest.resolve()
    if dest.is_dir():
        raise UsageError(f"{dest} is a folder; give the archive's file name with -o")
    with tempfile.TemporaryFile(dir=dest.parent) as plain:
        with tarfile.open(fileobj=plain, mode="w", format=tarfile.PAX_FORMAT) as tar:
            _member(tar, INDEX, (json.dumps(index, indent=2, ensure_ascii=False) + "\n").encode(), int(now))
            for _lid, files in runs:
                for f in files:
                    _member(tar, f"runs/{f.name}", f, int(now))
        check_bytes(plain, secrets)
        plain.seek(0)
        fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out, gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz:
                shutil.copyfileobj(plain, gz, PIECE)
            os.chmod(tmp, 0o600)
            os.replace(tmp, dest)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return Exported(dest, [lid for lid, _ in runs])
