"""A run's per-task results ("outcomes"): read from the file an agent benchmark writes (JSONL, JSON or
CSV; one task id and a success flag or score per row), so that a round of reruns can be scored
(pass@1, pass^k, the consistency gap) next to how it was routed.

The results live beside the manifest, in ``runs/<launch-id>.outcomes.jsonl`` (lines of ``{task:
score}`` objects, up to 10,000 tasks each); the manifest's ``outcomes`` keeps where they came from,
their counts and the file's name.
However many tasks a benchmark has, the manifest stays small, so a run never drops out of the
reports for the size of its results. Manifests of earlier versions kept the results inline
(``outcomes.results``): they are read as they are.

A bad file is one line naming the file and its first bad row; nothing is attached from it.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ccswitch_tui.atomic import atomic_write
from ccswitch_tui.errors import UsageError
from ccswitch_tui.runs.manifests import MAX_MANIFEST_BYTES, find_manifest, manifest_path, write_manifest
from ccswitch_tui.safe_read import decode_error_line, iter_lines, loads_json, read_text

if TYPE_CHECKING:
    from ccswitch_tui.paths import Paths

TASK_COLUMNS = ("task_id", "task", "id", "name")
SUCCESS_COLUMNS = ("success", "passed", "pass", "solved", "correct", "score", "reward")
_TRUE = frozenset({"true", "yes", "pass", "passed", "success", "succeeded", "ok", "solved"})
_FALSE = frozenset({"false", "no", "fail", "failed", "failure", "error", "unsolved"})
HOW = "one row per task with a task id and a success flag (true/false) or a score from 0 to 1"
RESULTS_SUFFIX = ".outcomes.jsonl"
MAX_RESULTS_BYTES = 256 * 1024 * 1024  # some millions of tasks; a larger file is not read
MAX_OUTCOMES_FILE = 256 * 1024 * 1024  # the file an agent wrote


def score_of(value: Any) -> float | None:
    """A success flag or a score as a number from 0 to 1; None when it is neither."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value) if 0 <= value <= 1 else None
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE:
            return 1.0
        if text in _FALSE:
            return 0.0
        try:
            number = float(text)
        except ValueError:
            return None
        return number if 0 <= number <= 1 else None
    return None


def _rows(path: Path, text: str) -> Iterator[tuple[int, Any]]:  # noqa: C901
    """(row number, row) for each row of the file, by its extension (or, failing that, its first character)."""
    kind = path.suffix.lower().lstrip(".")
    if kind not in ("jsonl", "ndjson", "json", "csv", "tsv"):
        first = text.lstrip()[:1]
        kind = "json" if first in "[{" and not _is_jsonl(text) else "jsonl" if first == "{" else "csv"
    if kind in ("jsonl", "ndjson"):
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    yield n, loads_json(line)
                except ValueError as exc:
                    yield n, _Bad(f"not JSON ({str(exc).split(':')[0]})")
        return
    if kind == "json":
        try:
            data = loads_json(text)
        except ValueError as exc:
            raise UsageError(f"{path}: not JSON ({exc}); the outcomes file must be {HOW}") from None
        if isinstance(data, dict) and isinstance(data.get("results"), (list, dict)):
            data = data["results"]
        if isinstance(data, dict):  # {task id: success}
            for n, (task, value) in enumerate(data.items(), 1):
                yield n, {"task_id": task, "success": value}
            return
        if not isinstance(data, list):
            raise UsageError(f"{path}: a JSON {type(data).__name__}, not a list of rows; "
                             f"the outcomes file must be {HOW}")
        yield from enumerate(data, 1)
        return
    reader = csv.DictReader(io.StringIO(text), delimiter="\t" if kind == "tsv" else ",")
    for n, row in enumerate(reader, 2):  # row 1 is the header
        yield n, row


def _is_jsonl(text: str) -> bool:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return len(lines) > 1 and all(ln.lstrip().startswith("{") for ln in lines[:2])


class _Bad:
    def __init__(self, why: str):
        self.why = why


def _pick(row: Mapping[str, Any], given: str | None, defaults: tuple[str, ...]) -> str | None:
    if given:
        return given if given in row else None
    return next((c for c in defaults if c in row), None)


def read_outcomes(path: Path, task_column: str | None = None, success_column: str | None = None) -> dict[str, Any]:  # noqa: C901
    """The outcomes of a file, ready for a manifest: ``{"source", "task_column", "success_column", "tasks",
    "passed", "results": {task id: score}}``. UsageError (one line) for a file that cannot be read or a
    bad row."""
    try:
        # Excel's "CSV UTF-8" (and Notepad) start with a byte-order mark
        text = read_text(path, MAX_OUTCOMES_FILE).removeprefix("\ufeff")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such outcomes file; give the file the agent wrote its results to") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: {decode_error_line(exc)}") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the outcomes file ({exc})") from None
    results: dict[str, float] = {}
    columns: tuple[str | None, str | None] = (None, None)
    for n, row in _rows(path, text):
        where = f"{path}: row {n}"
        if isinstance(row, _Bad):
            raise UsageError(f"{where}: {row.why}; the outcomes file must be {HOW}")
        if not isinstance(row, dict):
            raise UsageError(f"{where}: not an object with named columns; the outcomes file must be {HOW}")
        task_col = _pick(row, task_column, TASK_COLUMNS)
        ok_col = _pick(row, success_column, SUCCESS_COLUMNS)
        if task_col is None or ok_col is None:
            if task_col is None:
                missing = task_column or "a task id (" + ", ".join(TASK_COLUMNS) + ")"
            else:
                missing = success_column or "a success flag or score (" + ", ".join(SUCCESS_COLUMNS) + ")"
            raise UsageError(f"{where}: no column for {missing}; name the columns with --task-column and "
                             "--success-column")
        task = row[task_col]
        if not isinstance(task, (str, int)) or isinstance(task, bool) or str(task).strip() == "":
            raise UsageError(f"{where}: the task id in {task_col!r} is {json.dumps(task)[:40]}, not a name or number")
        task = str(task).strip()
        score = score_of(row[ok_col])
        if score is None:
            raise UsageError(f"{where}: {ok_col}={json.dumps(row[ok_col])[:40]} is not true/false or a score "
                             "from 0 to 1")
        if task in results:
            raise UsageError(f"{where}: task {task!r} appears twice; keep one result per task and run")
        results[task] = score
        columns = (task_col, ok_col)
    if not results:
        raise UsageError(f"{path}: no results in the outcomes file; it must be {HOW}")
    return {"source": str(path), "task_column": columns[0], "success_column": columns[1], "tasks": len(results),
            "passed": sum(1 for s in results.values() if s >= 1.0), "results": results}


def results_path(paths: Paths, launch_id: str) -> Path:
    return paths.runs / f"{launch_id}{RESULTS_SUFFIX}"


def results_of(m: Mapping[str, Any], paths: Paths | None = None) -> dict[str, float] | None:
    """The per-task scores of a run, or None (none attached, or damaged): from the file beside the
    manifest (needs ``paths``), or inline in a manifest of an earlier version."""
    out = m.get("outcomes")
    if not isinstance(out, dict):
        return None
    if isinstance(out.get("results_file"), str):
        return _read_results(paths.runs / Path(out["results_file"]).name) if paths is not None else None
    res = out.get("results")
    if not isinstance(res, dict):
        return None
    clean = {str(k): float(v) for k, v in res.items()
             if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1}
    return clean if len(clean) == len(res) else None


def _read_results(path: Path) -> dict[str, float] | None:
    """The ``{task: score}`` lines of a results file; None when it is missing or any line is damaged."""
    results: dict[str, float] = {}
    try:
        for line in iter_lines(path, MAX_RESULTS_BYTES, RESULTS_LINE_BYTES):
            if line is None:
                return None
            try:
                part = loads_json(line)
            except ValueError:
                return None
            if not isinstance(part, dict) or not all(
                    type(v) in (int, float) and 0 <= v <= 1 for v in part.values()):
                return None
            results.update(part)
    except OSError:
        return None
    return {t: float(v) for t, v in results.items()}


RESULTS_PER_LINE = 10_000
RESULTS_LINE_BYTES = MAX_RESULTS_BYTES  # a line of 10,000 tasks whose ids are long


def _results_text(results: Mapping[str, float]) -> str:
    items = list(results.items())
    return "".join(json.dumps(dict(items[i:i + RESULTS_PER_LINE]), ensure_ascii=False) + "\n"
                   for i in range(0, len(items), RESULTS_PER_LINE))


def attach(paths: Paths, launch_id: str, outcomes: Mapping[str, Any]) -> Path:
    """Add outcomes to a finished run: the results in their own file, then the manifest as it is on
    disk plus its ``outcomes`` (without the results)."""

    m = find_manifest(paths, launch_id)
    if m.get("ended") is None and m.get("exit_status") is None:
        raise UsageError(f"run {m['launch_id']} is still going; attach its outcomes after it ends "
                         "(or launch it with --outcomes FILE)")
    path = manifest_path(paths, m["launch_id"])
    # find_manifest read it already: what it holds, not its shown form
    raw = loads_json(read_text(path, MAX_MANIFEST_BYTES))
    entry = {k: v for k, v in outcomes.items() if k != "results"}
    results = results_path(paths, m["launch_id"])
    atomic_write(results, _results_text(outcomes.get("results") or {}), mode=0o600, durable=False)
    entry["results_file"] = results.name
    raw["outcomes"] = entry
    return write_manifest(paths, raw)
