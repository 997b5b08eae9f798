"""A provider's error (read and classed by ``bridge.provider_errors``) → the error Codex acts on.

Measured with Codex 0.171.0: it retries HTTP 401, 403, 404, 408, 413 and 422 five times (six
requests), ends the turn at once on a 400 (showing the body's message alone when the code is
``invalid_prompt``, ``model_not_found`` or ``content_policy_violation``; its own context-window
text for ``context_length_exceeded``), and after a ``response.failed`` retries every code but
``context_length_exceeded``, ``insufficient_quota``, ``usage_not_included``, ``invalid_prompt``,
``model_not_found``, ``content_policy_violation``, ``cyber_policy``, ``bio_policy`` and
``server_is_overloaded`` (the last ends the turn with "Selected model is at capacity", so an
overloaded provider is never given that code). So an error a retry cannot fix (context window,
key, invalid request, content filter) reaches Codex as an HTTP 400, or a ``response.failed``, with
a code it does not retry; a rate limit, an overload or a server error keeps its status, and a code
Codex retries.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ccswitch_tui.bridge.provider_errors import (
    AUTH,
    CONTENT_FILTER,
    CONTEXT_LENGTH,
    INVALID_REQUEST,
    OVERLOADED,
    RATE_LIMIT,
    SERVER,
    ProviderError,
    read_error,
)

# The code Codex is given for each class: one it ends the turn on for the first four (measured
# above), one it retries for the others.
RESPONSES_CODES = {CONTEXT_LENGTH: "context_length_exceeded", AUTH: "invalid_prompt", INVALID_REQUEST: "invalid_prompt",
               CONTENT_FILTER: "content_policy_violation", RATE_LIMIT: "rate_limit_exceeded",
               OVERLOADED: "overloaded", SERVER: "server_error"}
_TYPES = {CONTEXT_LENGTH: "invalid_request_error", AUTH: "authentication_error",
          INVALID_REQUEST: "invalid_request_error", CONTENT_FILTER: "invalid_request_error",
          RATE_LIMIT: "rate_limit_error", OVERLOADED: "server_error", SERVER: "server_error"}


# --- what Codex gets -------------------------------------------------------------------------------

def responses_status(status: int) -> int:
    """The HTTP status Codex gets for a provider's HTTP error, decided before its body is read: an
    error a retry cannot fix (a 4xx but 408, 409, 425 and 429) is a 400, which Codex does not retry;
    the others keep theirs (Codex retries a 5xx, and a 429 that says when)."""
    if 400 <= status < 500 and status not in (408, 409, 425, 429):
        return 400
    return status


def error_body(status: int, body: bytes | str | Mapping[str, Any] | None, provider: str = "provider") -> dict[str, Any]:
    """The body to answer Codex with for a provider's HTTP error: the provider's message, named as
    the provider's (with the provider's status when Codex gets another), and the code of its class."""
    return responses_error(read_error(body, status), provider, responses_status(status))


def responses_error(problem: ProviderError, provider: str, status: int | None = None) -> dict[str, Any]:
    message = problem.named(provider)
    if problem.status and status and problem.status != status:
        message += f" (HTTP {problem.status})"
    return {"error": {"message": message, "type": _TYPES[problem.error_class], "code": responses_code(problem),
                      "param": None}}


def responses_code(problem: ProviderError) -> str:
    """The code Codex gets in a ``response.failed`` or an error body: one it ends the turn on, or
    one it retries, as the class says."""
    return RESPONSES_CODES[problem.error_class]
