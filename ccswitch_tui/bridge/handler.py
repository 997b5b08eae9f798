"""The per-route hook for rewriting what passes through the bridge.

Each ``Route`` carries a ``Handler``; for every request the server asks it for an ``Exchange`` and
calls, in this order:

1. ``exchange.request(outgoing)`` once, before forwarding: it may change the method, the path
   (relative to the route's upstream base URL, query included), the headers and the body. The real
   key is already in the headers; the requested model and stream flag were read before this call
   from what the child sent.
   Right after it, the server asks ``exchange.record_fields()`` (optional: an exchange without it
   adds nothing) for fields to add to the request's record, e.g. what a translation changed.
2. ``exchange.response_head(status, headers)`` once, when the upstream's status and headers arrive;
   it returns the status and headers the child gets. When ``exchange.rewrites_body`` is true the
   server drops ``Content-Length`` and sends the answer chunked.
3. ``exchange.response_chunk(data)`` for every chunk of the upstream's body, as it arrives; the
   bytes it returns (possibly none, possibly several events) go to the child at once.
4. ``exchange.response_end()`` once after the upstream's body ended normally; its bytes are the
   last the child gets.

A handler cannot hand the key back: the server filters the headers before ``response_head``
gets them, and everything a handler returns (a translator that joins two halves of a secret writes
it whole) before the child gets it; the body reaches a handler that rewrites it as the upstream
sent it (a second filter would only cost a pass), and every text a record keeps is masked.
A handler's own failure sent to the child (``response.failed``, say) is what the record's outcome
says, with what the upstream had sent.
An exchange that parses the answer itself (a translation) may say so with ``observes`` (read
after ``response_head``): the server then does not parse the same bytes a second time, and takes
the record's facts of the answer from ``exchange.observed()`` (asked at the end, or when the
answer was cut): ``model_served``, ``system_fingerprint``, the four token counts,
``usage_source`` and ``error`` (the provider's error in one line, or None), and, not for the
record, ``upstream``: what the server says of the upstream's answer when the exchange failed on it
(``saw_data``: it held an SSE data line; ``terminal``: its stream's own end came; ``said_error``:
the failure is the provider's own error). Such an exchange also
says, with ``ended`` (read after each piece it returned went out), whether what it returned so
far ends the child's stream (its terminal event): the server then does not parse what the child
gets either. An exchange that gives an answer up (a translation it has no room for) says so with
``done_reading`` (optional, read after each chunk): the server then reads no more of the upstream's
answer, closes that connection and ends the child's.

The records always describe the wire on both sides: the child's path and requested model, the
upstream URL that was really called, and the served model and usage read from the upstream's own
answer (before any rewriting). A translator (Responses to Chat Completions, say) is therefore a
``Handler`` whose ``exchange()`` returns a stateful ``Exchange`` for the routes that need it; the
launch picks it when it builds the routes. ``passthrough(dialect)`` changes nothing.

A handler declares the API the child speaks to its route (``dialect``, bridge.routes): a pass-through
route's is its upstream's, a translating route's is the one it translates from (Responses). The route
answers with it (the bridge's own errors take its shape) and every record of the route names it.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ccswitch_tui.bridge.routes import Dialect
from ccswitch_tui.valueclass import valueclass


@valueclass
class Outgoing:
    """The request as it will be sent upstream."""

    method: str
    path: str  # relative to the route's upstream base URL, starting with "/", query included
    headers: dict[str, str]
    body: bytes


@runtime_checkable
class GivesUp(Protocol):
    """An exchange that can give its answer up: after each chunk the server asks ``done_reading``."""

    @property
    def done_reading(self) -> bool: ...


class Exchange(Protocol):
    rewrites_body: bool

    def request(self, outgoing: Outgoing) -> Outgoing: ...

    def record_fields(self) -> dict[str, Any]:
        """Fields the request's record gains, asked once after ``request()`` (optional)."""
        ...

    def response_head(self, status: int, headers: dict[str, str]) -> tuple[int, dict[str, str]]: ...

    def response_chunk(self, data: bytes) -> bytes: ...

    def response_end(self) -> bytes: ...


class Handler(Protocol):
    dialect: Dialect  # the API the child speaks to the route (bridge.routes)

    def exchange(self, method: str, path: str) -> Exchange:
        """A fresh exchange for one request of the child (``path`` as the child sent it, relative
        to the route, query included)."""
        ...


class _Unchanged:
    rewrites_body = False

    def request(self, outgoing: Outgoing) -> Outgoing:
        return outgoing

    def record_fields(self) -> dict[str, Any]:
        return {}

    def response_head(self, status: int, headers: dict[str, str]) -> tuple[int, dict[str, str]]:
        return status, headers

    def response_chunk(self, data: bytes) -> bytes:
        return data

    def response_end(self) -> bytes:
        return b""


class Passthrough:
    """Forwards everything unchanged (every route that translates nothing): the child speaks its
    upstream's API, ``dialect``."""

    _unchanged = _Unchanged()

    def __init__(self, dialect: Dialect) -> None:
        self.dialect: Dialect = dialect

    def exchange(self, method: str, path: str) -> Exchange:
        return self._unchanged


_PASSING: dict[str, Passthrough] = {}


def passthrough(dialect: Dialect) -> Passthrough:
    """The pass-through handler of a route whose child speaks ``dialect`` (one per dialect)."""
    return _PASSING.setdefault(dialect, Passthrough(dialect))


PASSTHROUGH = passthrough("unknown")  # a route that declares no API (the bridge answers it as OpenAI's)
