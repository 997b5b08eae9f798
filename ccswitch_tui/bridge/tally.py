"""What a run's requests went through, per task and over time: the parts of a run's summary that
the consistency board draws.

- ``by_task``: for each task id a request was tagged with (the ``X-CCS-Task`` header, recorded as
  ``task``): requests, tokens (input + output), retries, 401/403, 429, errors and the models served.
  At most ``MAX_TASKS`` tasks are kept; requests of further tasks are counted in ``tasks_left_out``.
- ``timeline``: the run's requests over time in at most ``BUCKETS`` equal slices from its first
  request to its last: requests, 401/403, 429, retries and errors per slice, and each change of the
  model served (the first ``MAX_MODEL_CHANGES``).

401/403 and 429 are counted by the record's ``error_class`` (``auth``, ``rate_limit``: the provider's
error, whatever status the child was given) when it has one, else by status. Records are read as
untrusted: a field of the wrong type counts as absent, an implausible token
count as none, and memory stays bounded whatever the file holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_TASKS = 2000
MAX_TASK_ID = 200  # characters of a task id kept
MAX_MODELS_PER_TASK = 8
BUCKETS = 48
MAX_POINTS = 100_000  # distinct time points held while reading; past it, the resolution halves
MAX_MODEL_CHANGES = 20
MAX_REQUEST_TOKENS = 10**12  # a count past this is no real request's (see runs.cells)
SLICE_FIELDS = ("requests", "auth_failures", "rate_limited", "retries", "errors")


def _tokens(value: Any) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_REQUEST_TOKENS
    return value if ok else 0


class Tally:
    """Fed one record at a time (``add``); ``result()`` gives the summary's ``by_task`` and ``timeline``."""

    def __init__(self) -> None:
        self.tasks: dict[str, dict[str, Any]] = {}
        self.left_out = 0
        self.points: dict[int, list[int]] = {}  # time point (seconds // resolution) -> SLICE_FIELDS counts
        self.resolution = 1
        self._seconds: dict[str, int | None] = {}  # "YYYY-MM-DDTHH:MM:SS" -> epoch second
        self.changes: list[dict[str, Any]] = []
        self.more_changes = 0
        self._served: str | None = None

    def add(self, r: Mapping[str, Any]) -> None:
        status = r.get("status")
        if "error_class" in r:  # the provider's error, whatever status the child was given
            auth, limited = r["error_class"] == "auth", r["error_class"] == "rate_limit"
        else:  # a record written before records had a class, or the bridge's own refusal
            auth, limited = status in (401, 403), status == 429
        retry = r.get("retry_of") is not None
        error = r.get("outcome") != "ok"
        served = r.get("model_served") if isinstance(r.get("model_served"), str) else None
        task = r.get("task")
        if isinstance(task, str) and task:
            self._add_task(task[:MAX_TASK_ID], r, auth, limited, retry, error, served)
        second = self._second(r.get("started"))
        if second is None:
            return
        point = self.points.get(second // self.resolution)
        if point is None:
            point = self.points[second // self.resolution] = [0, 0, 0, 0, 0]
            if len(self.points) > MAX_POINTS:
                self._coarsen()
                point = self.points[second // self.resolution]
        point[0] += 1
        point[1] += auth
        point[2] += limited
        point[3] += retry
        point[4] += error
        if served and served != self._served:
            if self._served is not None:
                if len(self.changes) < MAX_MODEL_CHANGES:
                    self.changes.append({"second": second, "from": self._served[:MAX_TASK_ID],
                                         "to": served[:MAX_TASK_ID]})
                else:
                    self.more_changes += 1
            self._served = served

    def _add_task(self, task: str, r: Mapping[str, Any], auth: bool, limited: bool, retry: bool, error: bool,
                  served: str | None) -> None:
        entry = self.tasks.get(task)
        if entry is None:
            if len(self.tasks) >= MAX_TASKS:
                self.left_out += 1
                return
            entry = self.tasks[task] = {"requests": 0, "tokens": 0, "retries": 0, "auth_failures": 0,
                                        "rate_limited": 0, "errors": 0, "models_served": {}}
        entry["requests"] += 1
        entry["tokens"] += _tokens(r.get("input_tokens")) + _tokens(r.get("output_tokens"))
        entry["retries"] += retry
        entry["auth_failures"] += auth
        entry["rate_limited"] += limited
        entry["errors"] += error
        models = entry["models_served"]
        if served and (served in models or len(models) < MAX_MODELS_PER_TASK):
            models[served[:MAX_TASK_ID]] = models.get(served[:MAX_TASK_ID], 0) + 1

    def _second(self, started: Any) -> int | None:
        if not isinstance(started, str) or len(started) < 19:
            return None
        head = started[:19]
        if head not in self._seconds:
            if len(self._seconds) > MAX_POINTS:
                self._seconds.clear()
            # lazy: a recorded launch's summary of no request (its start and end) needs no dates
            from datetime import datetime, timezone

            try:
                moment = datetime.fromisoformat(head).replace(tzinfo=timezone.utc)
                self._seconds[head] = int(moment.timestamp())
            except ValueError:
                self._seconds[head] = None
        return self._seconds[head]

    def _coarsen(self) -> None:
        self.resolution *= 2
        merged: dict[int, list[int]] = {}
        for point, counts in self.points.items():
            into = merged.setdefault(point // 2, [0, 0, 0, 0, 0])
            for i, n in enumerate(counts):
                into[i] += n
        self.points = merged

    def result(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.tasks or self.left_out:
            out["by_task"] = self.tasks
            out["tasks_left_out"] = self.left_out
        if self.points:
            out["timeline"] = self._timeline()
        return out

    def _timeline(self) -> dict[str, Any]:
        first, last = min(self.points) * self.resolution, (max(self.points) + 1) * self.resolution
        span = max(last - first, 1)
        width = -(-span // BUCKETS)  # seconds per slice, rounded up
        slices = [[0, 0, 0, 0, 0] for _ in range(-(-span // width))]
        for point, counts in self.points.items():
            into = slices[min((point * self.resolution - first) // width, len(slices) - 1)]
            for i, n in enumerate(counts):
                into[i] += n
        from datetime import datetime, timezone  # lazy: as in _second

        start = datetime.fromtimestamp(first, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        changes = [{"at": c["second"] - first, "from": c["from"], "to": c["to"]} for c in self.changes]
        return {"start": start, "seconds": span, "slice_seconds": width, "fields": list(SLICE_FIELDS),
                "slices": slices, "model_changes": changes, "more_model_changes": self.more_changes}
