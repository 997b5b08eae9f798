"""One request's record as the bridge fills it in, and the JSON object it becomes (one line of
``runs/<launch-id>.requests.jsonl``, see ``records``).

The server fills a ``RequestRecord`` in step by step as the request goes (read, forwarded,
answered, ended); ``as_dict()`` is the line's object, always in the same key order: the 28 fields
every relayed request has, then the optional ones in the order they arise — ``task`` (the child
tagged the request), ``request_body`` (with ``--record-bodies``), what the route's handler adds
when it rewrites the request (a translation: ``translated``, ``upstream_model``, ``dropped``),
``response_body``, and what a translation adds when it read the answer (``refusal``,
``skipped_parts``). A connection turned away before any request was read is a
``ConnectionRecord``: the shorter form of the same keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal


class _Absent(Enum):
    ABSENT = "absent"


ABSENT = _Absent.ABSENT  # an optional key the line leaves out (``task``: no header, not an empty one)

# The fields every relayed request's line has, in their order.
FIELDS = ("id", "started", "method", "route", "dialect", "path", "upstream_url", "key_fingerprint", "model_requested",
          "model_served", "stream", "status", "upstream_status", "outcome", "ttfb_ms", "duration_ms",
          "in_flight", "retry_of", "input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens",
          "usage_source", "request_bytes", "response_bytes", "provider_headers", "system_fingerprint",
          "error", "error_class")
_FIELD_SET = frozenset(FIELDS)
BODIES = ("request_body", "response_body")  # the large ones, written a piece at a time (``records.record_line``)


@dataclass(slots=True)
class RequestRecord:
    """What one request came to. Filled in by the server as the request goes; never holds a
    secret (every text from outside is masked before it is set)."""

    id: int
    started: str
    method: str
    route: str | None
    dialect: str | None  # the API the child speaks on the route, as the route's handler declares it
    path: str | None
    key_fingerprint: str | None
    in_flight: int
    upstream_url: str | None = None
    model_requested: str | None = None
    model_served: str | None = None
    stream: bool = False
    status: int | None = None
    upstream_status: int | None = None
    outcome: str | None = None
    ttfb_ms: float | None = None
    duration_ms: float | None = None
    retry_of: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    usage_source: str = "missing"
    request_bytes: int = 0
    response_bytes: int = 0
    provider_headers: dict[str, str] = field(default_factory=dict)
    system_fingerprint: str | None = None
    error: str | None = None
    error_class: str | None = None
    task: str | None | _Absent = ABSENT
    # raw bytes while the request goes (masked into text off the event loop); None: not recorded
    request_body: bytes | str | None = None
    handler_fields: dict[str, Any] = field(default_factory=dict)  # what the route's handler added
    response_body: bytes | str | None = None
    answer_fields: dict[str, Any] = field(default_factory=dict)  # what a translation added of the answer

    def ended(self, outcome: str, error: str | None, status: int | None | _Absent = ABSENT) -> None:
        """The request's outcome and its error (None for none), and the status the child got."""
        if status is not ABSENT:
            self.status = status
        self.outcome = outcome
        self.error = error

    def add_handler_field(self, name: str, value: object) -> None:
        """A field the route's handler adds; the wire facts and the fields already there stay."""
        if name not in _FIELD_SET and name not in BODIES and name != "task" and name not in self.handler_fields:
            self.handler_fields[name] = value

    def set_answer_field(self, name: str, value: object) -> None:
        """A fact of the answer: one of the fields, or one more a translation read from it."""
        if name in _FIELD_SET:
            setattr(self, name, value)
        elif name in self.handler_fields:
            self.handler_fields[name] = value
        else:
            self.answer_fields[name] = value

    def as_dict(self) -> dict[str, Any]:
        """The record's line as a JSON object: the fields, then the optional ones (see the module)."""
        out = {name: getattr(self, name) for name in FIELDS}
        if self.task is not ABSENT:
            out["task"] = self.task
        if self.request_body is not None:
            out["request_body"] = self.request_body
        out.update(self.handler_fields)
        if self.response_body is not None:
            out["response_body"] = self.response_body
        for name, value in self.answer_fields.items():
            out.setdefault(name, value)
        return out


@dataclass(frozen=True, slots=True)
class ConnectionRecord:
    """A connection turned away before a request was read (too many at once, another user's)."""

    id: int
    started: str
    key_fingerprint: str | None
    status: int | None
    in_flight: int
    error: str
    outcome: Literal["refused"] = "refused"

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "started": self.started, "method": None, "route": None, "path": None,
                "upstream_url": None, "key_fingerprint": self.key_fingerprint, "status": self.status,
                "outcome": self.outcome, "duration_ms": 0.0, "in_flight": self.in_flight,
                "usage_source": "missing", "error": self.error}
