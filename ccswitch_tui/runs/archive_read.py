"""`ccs runs import ARCHIVE...`: runs exported on other machines, read-only here, with their origin.

An archive is read as hostile input: it is read whole, and checked whole, before anything is written —
regular files only (no links, devices or folders), names ``ccs-export.json`` or
``runs/<launch-id>.json|.requests.jsonl|.outcomes.jsonl`` only (no absolute path, no ``..``), each
member and the whole bounded, every manifest a JSON object named by its launch id, every line of its
records and results a JSON object, every file the one its index lists with the digest it lists. Any
fault refuses the archive (and the others given with it) in one line, and nothing is written.

Each imported manifest gains ``origin`` (the exporting machine, its ccs version, when it exported, the
id of its own fingerprint salt) unless it has one already (a run imported there first keeps where it
ran). A run already here is left as it is: importing an archive twice changes nothing; a later export
of an imported run replaces the earlier one. A round locked on its first run stays locked here.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tarfile
import tempfile
import zlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from ccswitch_tui.atomic import atomic_write
from ccswitch_tui.errors import UsageError
from ccswitch_tui.paths import Paths, ensure_private_dir
from ccswitch_tui.runs.archive_write import FORMAT, INDEX, SIDE_FILES, VERSION, side_file
from ccswitch_tui.runs.manifests import manifest_path
from ccswitch_tui.runs.origin import MACHINE_RE, imported_from
from ccswitch_tui.runs.round_locks import lock_round, locked_first
from ccswitch_tui.safe_read import loads_json, read_text
from ccswitch_tui.valueclass import field, valueclass

MAX_ARCHIVE = 8 << 30  # bytes of the archive file
MAX_TOTAL = 16 << 30  # bytes of all its members
MAX_MEMBERS = 100_000
MAX_INDEX, MAX_MANIFEST, MAX_RECORDS = 64 << 20, 16 << 20, 8 << 30
MAX_RECORD_LINE = 256 << 20
LAUNCH_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
MEMBER = re.compile(r"runs/(?P<lid>[A-Za-z0-9][A-Za-z0-9._-]{0,127}?)"
                    r"(?P<kind>\.requests\.jsonl|\.outcomes\.jsonl|\.json)")
SALT_ID = re.compile(r"[0-9a-f]{12}")
IMPORTED_MODE = 0o400  # read-only: an imported run is changed on the machine it ran on
PIECE = 1 << 20


class ArchiveRefused(UsageError):
    """An archive that is not one ccs wrote, or was tampered with: one line, nothing written."""


@valueclass
class RunIn:
    launch_id: str
    manifest: dict[str, Any]
    beside: dict[str, Path]  # the files beside the manifest (records, results) by suffix, as staged
    exported: str


@valueclass
class Archive:
    path: Path
    machine: str
    ccs_version: str
    exported: str
    runs: list[RunIn] = field(default_factory=list)


@valueclass
class Imported:
    """What an import did, per archive: runs written, runs already here, notes."""

    counts: dict[Path, tuple[int, int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


# --- reading ---------------------------------------------------------------------------------------------

def _refuse(path: Path, why: str) -> ArchiveRefused:
    return ArchiveRefused(f"{path}: refused: {why}; nothing was imported")


def _shown(name: str) -> str:
    return repr(name if len(name) <= 80 else name[:79] + "…")


def _member_problem(m: tarfile.TarInfo) -> str | None:
    name = m.name
    if m.issym() or m.islnk():
        return f"member {_shown(name)} is a link"
    if not m.isreg() or m.issparse():
        return f"member {_shown(name)} is not a regular file"
    if name.startswith("/") or re.match(r"[A-Za-z]:", name):
        return f"member {_shown(name)} has an absolute path"
    if ".." in name.split("/") or "\\" in name:
        return f"member {_shown(name)} leaves the archive's folder ('..' or '\\\\' in its path)"
    if name != INDEX and not MEMBER.fullmatch(name):
        return f"member {_shown(name)} is not a file a ccs runs archive holds (ccs-export.json, runs/ID.json, " \
               "runs/ID.requests.jsonl, runs/ID.outcomes.jsonl)"
    limit = MAX_INDEX if name == INDEX else MAX_RECORDS if name.endswith(".jsonl") else MAX_MANIFEST
    if m.size > limit:
        return f"member {_shown(name)} is {m.size} bytes, more than the {limit} bytes such a file may have"
    return None


def _members(path: Path, stream: IO[bytes], staging: Path) -> Iterator[tuple[str, bytes | Path, str]]:
    """(name, content — bytes, or the staged file of a records member —, sha256) of each member."""
    total = 0
    with tarfile.open(fileobj=stream, mode="r|*") as tar:
        for n, member in enumerate(tar, 1):
            if n > MAX_MEMBERS:
                raise _refuse(path, f"more than {MAX_MEMBERS} members")
            problem = _member_problem(member)
            if problem:
                raise _refuse(path, problem)
            total += member.size
            if total > MAX_TOTAL:
                raise _refuse(path, f"its members hold more than {MAX_TOTAL} bytes")
            source = tar.extractfile(member)
            assert source is not None  # a regular file
            digest = hashlib.sha256()
            if member.name.endswith(".jsonl"):
                staged = staging / f"{n}.jsonl"
                with open(staged, "wb") as out:
                    while piece := source.read(PIECE):
                        digest.update(piece)
                        out.write(piece)
                yield member.name, staged, digest.hexdigest()
            else:
                data = source.read(member.size + 1)
                digest.update(data)
                yield member.name, data, digest.hexdigest()


def _json_object(path: Path, name: str, data: bytes | Path) -> dict[str, Any]:
    if isinstance(data, Path):  # staged to disk: only records are, so the member is misnamed
        raise _refuse(path, f"{name} is not a JSON object")
    try:
        value = loads_json(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _refuse(path, f"{name} is not JSON ({str(exc).splitlines()[0][:120]})") from None
    if not isinstance(value, dict):
        raise _refuse(path, f"{name} is not a JSON object")
    return value


def _check_lines(path: Path, name: str, staged: Path) -> None:
    with open(staged, "rb") as fh:
        for n, line in enumerate(_lines(fh), 1):
            if line is None:
                raise _refuse(path, f"{name} line {n} is longer than {MAX_RECORD_LINE} bytes")
            if not line.strip():
                continue
            try:
                record = loads_json(line.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                raise _refuse(path, f"{name} line {n} is not JSON") from None
            if not isinstance(record, dict):
                raise _refuse(path, f"{name} line {n} is not a JSON object")


def _lines(fh: IO[bytes]) -> Iterator[bytes | None]:
    """Lines without their ends; None for one past the limit."""
    while True:
        line = fh.readline(MAX_RECORD_LINE + 1)
        if not line:
            return
        if len(line) > MAX_RECORD_LINE:
            yield None
            return
        yield line.rstrip(b"\n")


def _text(index: Mapping[str, Any], key: str, limit: int = 64) -> str | None:
    value = index.get(key)
    if isinstance(value, str) and 0 < len(value) <= limit and value.isprintable():
        return value
    return None


def _origin_problem(origin: Any) -> str | None:
    if not isinstance(origin, dict):
        return "is not an object"
    if not isinstance(origin.get("machine"), str) or not MACHINE_RE.fullmatch(origin["machine"]):
        return "names no machine"
    salt = origin.get("install_salt")
    if salt is not None and not (isinstance(salt, str) and SALT_ID.fullmatch(salt)):
        return "names a salt id that is not 12 hex digits"
    return None


def read_archive(path: Path, staging: Path) -> Archive:
    """Read and check a whole archive (records staged under ``staging``); ArchiveRefused on any fault."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such archive; give a file written by `ccs runs export`") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the archive ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as stream:
        st = os.fstat(stream.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(path, "not a regular file")
        if st.st_size > MAX_ARCHIVE:
            raise _refuse(path, f"{st.st_size} bytes, more than the {MAX_ARCHIVE} an archive may have")
        seen: dict[str, tuple[bytes | Path, str]] = {}
        try:
            for name, content, digest in _members(path, stream, staging):
                if name in seen:
                    raise _refuse(path, f"member {_shown(name)} appears twice")
                seen[name] = (content, digest)
        except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
            raise _refuse(path, f"not a readable ccs runs archive ({type(exc).__name__}: "
                                f"{str(exc).splitlines()[0][:120] if str(exc) else 'damaged'})") from None
    return _check(path, seen)


def _check(path: Path, seen: Mapping[str, tuple[bytes | Path, str]]) -> Archive:  # noqa: C901
    if INDEX not in seen:
        raise _refuse(path, f"not a ccs runs archive (no {INDEX}; write one with `ccs runs export`)")
    index = _json_object(path, INDEX, seen[INDEX][0])
    if index.get("format") != FORMAT or not isinstance(index.get("version"), int):
        raise _refuse(path, f"not a ccs runs archive ({INDEX} names no format {FORMAT!r})")
    if index["version"] > VERSION:
        raise _refuse(path, f"written by a newer ccs (archive version {index['version']}); upgrade ccs to import it")
    machine, version, exported = _text(index, "machine"), _text(index, "ccs_version"), _text(index, "exported")
    if machine is None or not MACHINE_RE.fullmatch(machine) or version is None or exported is None:
        raise _refuse(path, f"{INDEX} does not name the machine, ccs version and time of the export")
    salt = index.get("install_salt")
    if salt is not None and not (isinstance(salt, str) and SALT_ID.fullmatch(salt)):
        raise _refuse(path, f"{INDEX} names a salt id that is not 12 hex digits")
    entries = index.get("runs")
    if not isinstance(entries, list):
        raise _refuse(path, f"{INDEX} lists no runs")
    archive = Archive(path, machine, version, exported)
    listed: set[str] = {INDEX}
    for entry in entries:
        lid = entry.get("launch_id") if isinstance(entry, dict) else None
        files = entry.get("files") if isinstance(entry, dict) else None
        if not isinstance(lid, str) or not LAUNCH_ID.fullmatch(lid) or not isinstance(files, dict):
            raise _refuse(path, f"{INDEX} lists a run without a valid launch id and files")
        if any(r.launch_id == lid for r in archive.runs):
            raise _refuse(path, f"{INDEX} lists run {lid} twice")
        own = {f"{lid}.json", *(f"{lid}{suffix}" for suffix in SIDE_FILES)}
        if f"{lid}.json" not in files or any(n not in own for n in files):
            raise _refuse(path, f"{INDEX} lists files for run {lid} that are not its manifest, records and results")
        for name, digest in files.items():
            member = f"runs/{name}"
            if member not in seen:
                raise _refuse(path, f"{member} is listed in {INDEX} but missing")
            if digest != f"sha256:{seen[member][1]}":
                raise _refuse(path, f"{member} is not what {INDEX} says it is (its sha256 differs)")
            listed.add(member)
        archive.runs.append(_run(path, lid, seen, archive, salt))
    extra = sorted(set(seen) - listed)
    if extra:
        raise _refuse(path, f"member {_shown(extra[0])} is not listed in {INDEX}")
    return archive


def _run(path: Path, lid: str, seen: Mapping[str, tuple[bytes | Path, str]], archive: Archive,
         salt: str | None) -> RunIn:
    name = f"runs/{lid}.json"
    manifest = _json_object(path, name, seen[name][0])
    if manifest.setdefault("launch_id", lid) != lid:
        raise _refuse(path, f"{name} holds the manifest of another run ({_shown(str(manifest['launch_id']))})")
    if "label" in manifest and not isinstance(manifest["label"], str):
        raise _refuse(path, f"{name}: its label is not text")
    if manifest.get("machine") is not None and not (isinstance(manifest["machine"], str)
                                                    and MACHINE_RE.fullmatch(manifest["machine"])):
        raise _refuse(path, f"{name}: its machine is not a machine's name")
    if "origin" in manifest:
        problem = _origin_problem(manifest["origin"])
        if problem:
            raise _refuse(path, f"{name}: its origin {problem}")
    else:
        manifest["origin"] = {"machine": archive.machine, "ccs_version": archive.ccs_version,
                              "exported": archive.exported, "install_salt": salt}
    beside: dict[str, Path] = {}
    for suffix in SIDE_FILES:
        own = f"{lid}{suffix}"
        if side_file(manifest, suffix) not in (None, own):
            raise _refuse(path, f"{name} names a file beside it that is not runs/{own}")
        member = seen.get(f"runs/{own}")
        if member is not None:
            assert isinstance(member[0], Path)
            _check_lines(path, f"runs/{own}", member[0])
            beside[suffix] = member[0]
    return RunIn(lid, manifest, beside, archive.exported)


# --- writing ---------------------------------------------------------------------------------------------

def _encoded(m: Mapping[str, Any]) -> bytes:
    return (json.dumps(m, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _current(paths: Paths, lid: str) -> dict[str, Any] | None:
    try:
        value = loads_json(read_text(manifest_path(paths, lid)))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _install(staged: Path, dest: Path) -> None:
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out, open(staged, "rb") as src:
            while piece := src.read(PIECE):
                out.write(piece)
        os.chmod(tmp, IMPORTED_MODE)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def import_archives(paths: Paths, archive_paths: Sequence[Path]) -> Imported:  # noqa: C901
    """Read and check every archive, then write their runs; nothing is written when one is refused."""
    result = Imported()
    with tempfile.TemporaryDirectory(prefix="ccs-import-") as staging:
        archives = []
        for i, p in enumerate(archive_paths):
            folder = Path(staging) / str(i)
            folder.mkdir()
            archives.append(read_archive(p, folder))
        newest: dict[str, RunIn] = {}
        for a in archives:
            for run in a.runs:
                if run.launch_id not in newest or run.exported > newest[run.launch_id].exported:
                    newest[run.launch_id] = run
        ensure_private_dir(paths.runs)
        for a in archives:
            written = kept = 0
            for run in a.runs:
                if newest[run.launch_id] is not run or not _wanted(paths, run, result.notes):
                    kept += 1
                    continue
                for suffix, staged in run.beside.items():
                    _install(staged, paths.runs / f"{run.launch_id}{suffix}")
                atomic_write(manifest_path(paths, run.launch_id), _encoded(run.manifest), mode=IMPORTED_MODE,
                             durable=False)
                written += 1
            result.counts[a.path] = (written, kept)
        for run in newest.values():
            label = run.manifest.get("label")
            if run.manifest.get("locked") is True and isinstance(label, str) and locked_first(paths, label) is None:
                lock_round(paths, label, run.launch_id)
                result.notes.append(f"round {label!r} is locked on its first run {run.launch_id} (from "
                                    f"{run.manifest['origin'].get('machine')}): later runs with --label {label} "
                                    "are held to it")
    return result


def _wanted(paths: Paths, run: RunIn, notes: list[str]) -> bool:
    """Whether to write ``run``: not when it is here already (the same, a run of this machine, or a later
    export of it)."""
    current = _current(paths, run.launch_id)
    if current is None:
        return not manifest_path(paths, run.launch_id).exists() or _unreadable(paths, run, notes)
    if current == run.manifest:
        return False
    here = imported_from(current)
    if here is None:
        notes.append(f"run {run.launch_id} is a run of this machine already: kept as it is")
        return False
    if str(here.get("exported") or "") >= run.exported:
        notes.append(f"run {run.launch_id}: an import from a later export ({here.get('exported')}) is here: kept")
        return False
    return True


def _unreadable(paths: Paths, run: RunIn, notes: list[str]) -> bool:
    notes.append(f"run {run.launch_id}: {manifest_path(paths, run.launch_id)} is here but cannot be read: kept as "
                 "it is (remove it to import the run)")
    return False
