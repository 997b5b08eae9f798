"""Request records: one JSON object per line in ``runs/<launch-id>.requests.jsonl``, appended as
each request ends, fails or is aborted; and the summary a manifest keeps of them.

A record never holds a secret: URLs lose their credentials and secret-looking query values, the
provider headers kept are an allowlist of request ids and rate limits, and every text that comes
from outside (errors, and bodies when asked for) passes through ``Masker`` first.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ccswitch_tui import fast_json
from ccswitch_tui.bridge.tally import Tally
from ccswitch_tui.bridge.usage_cells import UsageCells
from ccswitch_tui.policy import mask, secret_param
from ccswitch_tui.policy.redact import redact_text
from ccswitch_tui.policy.secret_forms import SecretForms

RECORDS_SUFFIX = ".requests.jsonl"

# Outcomes, each a word a person can filter on.
OK = "ok"  # the upstream answered 2xx/3xx and the answer's end reached the child
UPSTREAM_ERROR = "upstream-error"  # the upstream answered 4xx/5xx, or the answer the child got says it failed
UPSTREAM_ABORTED = "upstream-aborted"  # the upstream broke off mid-answer
UNREACHABLE = "unreachable"  # no connection to the upstream (answered 502 by the bridge)
CLIENT_GONE = "client-disconnected"  # the child went away before the answer's end reached it
REFUSED = "refused"  # answered by the bridge itself: bad token, --strict-model
STOPPED = "bridge-stopped"  # still in flight when the launch ended
BRIDGE_ERROR = "bridge-error"  # the bridge itself failed (answered 502)

# Provider response headers worth keeping: request ids (to quote to a provider) and rate limits.
_KEEP_HEADERS = ("x-request-id", "request-id", "x-oneapi-request-id", "openai-processing-ms",
                 "openai-model", "openai-version", "retry-after", "cf-ray")
_KEEP_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-", "ratelimit-")
def records_path(runs_dir: Path, launch_id: str) -> Path:
    return runs_dir / f"{launch_id}{RECORDS_SUFFIX}"


class Masker:
    """Replaces the given secrets (in every form they travel in) and anything shaped like a
    credential with a mask."""

    def __init__(self, secrets: Iterable[str]):
        self._forms = SecretForms(((s, None) for s in secrets if s), mask)  # every form (policy.secret_forms)
        # Most short texts come again and again (a route's path, the upstream's URL, a model name):
        # masked once each. The rule is a few tens of microseconds of Python per text.
        self._short: dict[str, str] = {}

    def __call__(self, text: str | None) -> str | None:
        if not text:
            return text
        short = len(text) <= _SHORT_TEXT
        if short:
            done = self._short.get(text)
            if done is not None:
                return done
        masked = redact_text(self.exact(text) or "")  # the policy's rule: key-shaped tokens, URL credentials, headers
        if short:
            if len(self._short) >= _SHORT_TEXTS:
                self._short.clear()
            self._short[text] = masked
        return masked

    def exact(self, text: str | None) -> str | None:
        """Only the given secrets masked (in every form): for names (a model) that the credential
        shapes would mangle."""
        if not text:
            return text
        return self._forms.text(text)

    def clip(self, text: str | None, limit: int = 500) -> str | None:
        """Masked first, cut after: a secret across the cut is masked whole, never left half in clear."""
        masked = self(text)
        return masked[:limit] if masked else masked


_SHORT_TEXT, _SHORT_TEXTS = 512, 1024  # the texts a Masker remembers: this long at most, this many


def mask_value(value: str) -> str:
    return mask(value)


@lru_cache(maxsize=512)
def safe_url(url: str) -> str:
    """``url`` without user info and with secret-looking query values masked."""
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, "****" if secret_param(k) else v) for k, v in pairs], safe="*:/")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def provider_headers(headers: Mapping[str, str]) -> dict[str, str]:
    out = {}
    for name, value in headers.items():
        low = name.lower()
        if low in _KEEP_HEADERS or low.startswith(_KEEP_PREFIXES):
            out[low] = value
    return out


class RecordWriter:
    """Appends records to the JSONL file, one ``write`` per line, flushed at once so another process
    (``ccs runs``, the TUI) can follow a run live. Thread-safe.

    A record that cannot be written (a full disk, a quota, an I/O error) is never lost silently: the
    part of its line that did get written is cut off again (no half line is left for a reader to
    trip on), ``lost`` counts it, and ``on_lost(lost, why)`` hears of it at the time."""

    def __init__(self, path: Path, on_lost: Callable[[int, str], None] | None = None):
        self.path = path
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        self._size = os.fstat(self._fd).st_size
        self._lock = threading.Lock()
        self._on_lost = on_lost
        self.count = 0
        self.lost = 0
        self.lost_why: str | None = None

    def write(self, record: Mapping[str, Any], large: tuple[str, ...] = ()) -> None:
        """Append ``record``; its string fields named in ``large`` are written a piece at a time
        (``record_line``): for a thread beside the event loop, never for the loop itself."""
        line = record_line(record, large)
        with self._lock:
            if self._fd < 0:
                return
            done = 0
            try:
                while done < len(line):
                    done += os.write(self._fd, line[done:] if done else line)
            except OSError as exc:
                self._cut_back(done)
                self.lost += 1
                self.lost_why = exc.strerror or str(exc)
                lost, why = self.lost, self.lost_why
            else:
                self._size += done
                self.count += 1
                return
        if self._on_lost is not None:
            self._on_lost(lost, why)

    def _cut_back(self, written: int) -> None:
        """What got written of a line that could not be written whole, removed again."""
        if not written:
            return
        try:
            os.ftruncate(self._fd, self._size)
        except OSError:
            self._size += written  # left as it is: a reader skips a line that is not JSON

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


LINE_PIECE = 64 * 1024  # characters of a large field encoded at a time


def give_way(took: float) -> None:
    """After a piece of work that took ``took`` seconds in a thread beside the bridge's event loop:
    sleep as long, so that the loop finds the interpreter free at least half the time. A thread
    that lets go of it only for an instant (``sleep(0)``) takes it back before the loop can, and
    the loop, which lets go of it at every read and write, then waits for it again and again."""
    time.sleep(min(took, 0.005))


def record_line(record: Mapping[str, Any], large: tuple[str, ...] = ()) -> bytes:
    """``record`` as one JSON line (compact, non-ASCII kept). The string fields named in ``large``
    are encoded a piece at a time, giving way between pieces (``give_way``): ``json.dumps`` of a
    record with two MiB of body text holds the interpreter for 10-25 ms, and the bridge's event
    loop, in another thread, would wait that long. The line is byte for byte what ``json.dumps``
    makes."""
    def dumps(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    if not any(isinstance(record.get(k), str) and len(record[k]) > LINE_PIECE for k in large):
        return (dumps(record) + "\n").encode()
    parts = []
    for key, value in record.items():
        if key in large and isinstance(value, str):
            pieces = []
            for start in range(0, len(value), LINE_PIECE):
                took = time.perf_counter()
                pieces.append(_encode_string(value[start:start + LINE_PIECE])[1:-1])
                give_way(time.perf_counter() - took)
            encoded = '"' + "".join(pieces) + '"'
        else:
            encoded = dumps(value)
        parts.append(f"{dumps(str(key))}:{encoded}")
    return ("{" + ",".join(parts) + "}\n").encode()


_encode_string = fast_json.quote  # what json.dumps writes for a string with ensure_ascii=False


def read_records(path: Path) -> list[dict[str, Any]]:
    """Every complete record in the file (a line being written is left out)."""
    try:
        raw = path.read_bytes()
    except OSError:
        return []
    out = []
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            out.append(data)
    return out


def _add(total: dict[str, int], key: str, value: Any) -> None:
    if isinstance(value, int) and not isinstance(value, bool):
        total[key] = total.get(key, 0) + value


def carries_usage(record: Mapping[str, Any]) -> bool:
    """Whether a request's answer should report token usage: one that named a model (a generation,
    an embedding). A models list, a health check or a file download carries none."""
    return bool(record.get("model_requested")) and str(record.get("method", "")).upper() == "POST"


def summarize(records: Iterable[Mapping[str, Any]], expected_models: Iterable[str] = (),  # noqa: C901
              usage: bool = True) -> dict[str, Any]:
    """The manifest's view of a run's requests: counts by path and status, token totals, models
    requested and served, errors and their classes, retries (requests that were another try of an
    earlier one: ``retry_of``), the highest concurrency, and findings (a model that was not the
    profile's, a model the provider swapped)."""
    by_path: Counter[str] = Counter()
    classes: Counter[str] = Counter()
    classed = False  # records written before records had a class have none: then no error_classes
    retries = 0
    by_status: Counter[str] = Counter()
    by_outcome: Counter[str] = Counter()
    requested: Counter[str] = Counter()
    served: Counter[str] = Counter()
    endpoints: Counter[str] = Counter()
    tokens: dict[str, int] = {}
    missing_usage = 0
    max_concurrency = 0
    errors: list[dict[str, Any]] = []
    swaps: Counter[tuple[str, str]] = Counter()
    tally = Tally()
    cells = UsageCells() if usage else None
    for r in records:
        tally.add(r)
        if cells is not None:
            cells.add(r)
        path = str(r.get("path") or "?").split("?")[0]
        by_path[f"{r.get('method') or '?'} {path}"] += 1
        by_status[str(r.get("status"))] += 1
        by_outcome[str(r.get("outcome"))] += 1
        if r.get("upstream_url"):
            endpoints[str(r["upstream_url"]).split("?")[0]] += 1
        if r.get("model_requested"):
            requested[r["model_requested"]] += 1
        if r.get("model_served"):
            served[r["model_served"]] += 1
        if r.get("model_requested") and r.get("model_served") and r["model_requested"] != r["model_served"]:
            swaps[(r["model_requested"], r["model_served"])] += 1
        for k in ("input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens"):
            _add(tokens, k, r.get(k))
        if r.get("usage_source") == "missing" and r.get("outcome") == OK and carries_usage(r):
            missing_usage += 1
        in_flight = r.get("in_flight")
        if isinstance(in_flight, int):
            max_concurrency = max(max_concurrency, in_flight + 1)
        if "error_class" in r:
            classed = True
            if isinstance(r["error_class"], str):
                classes[r["error_class"]] += 1
        retries += r.get("retry_of") is not None
        if r.get("outcome") != OK and len(errors) < 20:
            errors.append({"id": r.get("id"), "path": path, "status": r.get("status"),
                           "outcome": r.get("outcome"), "error": r.get("error")})
    expected = sorted(set(expected_models))
    findings = []
    unexpected = sorted(m for m in requested if expected and m not in expected)
    for m in unexpected:
        findings.append({"code": "model-not-pinned", "severity": "warn", "model": m, "count": requested[m],
                         "message": f"{requested[m]} request(s) asked for {m!r}, not the profile's "
                                    f"{', '.join(expected)} (--strict-model refuses them)"})
    for (asked, got), n in sorted(swaps.items()):
        findings.append({"code": "model-swapped", "severity": "info", "model": asked, "served": got, "count": n,
                         "message": f"{n} request(s) for {asked!r} were answered by {got!r}"})
    if missing_usage:
        findings.append({"code": "usage-missing", "severity": "info", "count": missing_usage,
                         "message": f"{missing_usage} successful request(s) reported no token usage"})
    summary = {
        "requests": sum(by_outcome.values()),
        "by_path": dict(sorted(by_path.items())),
        "by_status": dict(sorted(by_status.items())),
        "by_outcome": dict(sorted(by_outcome.items())),
        "endpoints": dict(sorted(endpoints.items())),
        "models_requested": dict(sorted(requested.items())),
        "models_served": dict(sorted(served.items())),
        "tokens": tokens,
        "errors": sum(n for o, n in by_outcome.items() if o != OK),
        "retries": retries,
        "error_samples": errors,
        "max_concurrency": max_concurrency,
        "findings": findings,
        **tally.result(),
    }
    if cells is not None:  # what `ccs usage` sums (bridge/usage_cells.py); a report reading records skips it
        summary["usage"] = cells.result()
    if classed:
        summary["error_classes"] = dict(sorted(classes.items()))
    return summary
