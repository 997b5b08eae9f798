"""A provider's error → the error Codex shows, with the provider's own message.

Before the stream starts, the HTTP status and headers are kept (Codex retries a 5xx itself, and a
429 only when it carries ``Retry-After``; it shows a 400's body) and the body becomes the OpenAI
error shape ``{"error": {"message", "type", "code"}}``.
Inside a stream, the error becomes a ``response.failed`` event (see stream.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

MAX_MESSAGE = 2000


def provider_message(body: bytes | str | Mapping[str, Any] | None, status: int | None = None) -> str:
    """The human message in whatever error body a provider sent (JSON in several shapes, or text)."""
    value: Any = body
    if isinstance(body, (bytes, str)):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        try:
            value = json.loads(text)
        except ValueError:
            value = text.strip()
    message = _find_message(value)
    if not message:
        message = f"HTTP {status}" if status else "unknown error"
    return message[:MAX_MESSAGE]


def _find_message(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        error = value.get("error")
        if isinstance(error, Mapping):
            found = _find_message(error)
            if found:
                return found
        if isinstance(error, str) and error:
            return error
        for key in ("message", "msg", "detail", "error_msg", "errmsg"):
            if isinstance(value.get(key), str) and value[key]:
                return value[key]
        base = value.get("base_resp")  # MiniMax
        if isinstance(base, Mapping) and isinstance(base.get("status_msg"), str):
            return base["status_msg"]
    if isinstance(value, list) and value:
        return _find_message(value[0])
    return ""


def provider_code(body: bytes | str | Mapping[str, Any] | None) -> str | None:
    value: Any = body
    if isinstance(body, (bytes, str)):
        try:
            value = json.loads(body)
        except ValueError:
            return None
    if isinstance(value, Mapping) and isinstance(value.get("error"), Mapping):
        code = value["error"].get("code") or value["error"].get("type")
        return str(code) if code is not None else None
    return None


_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
          408: "timeout", 413: "invalid_request_error", 422: "invalid_request_error", 429: "rate_limit_error"}


def error_body(status: int, body: bytes | str | Mapping[str, Any] | None, provider: str = "provider") -> dict[str, Any]:
    """The body to answer Codex with for a provider's HTTP error: the provider's message, named as
    the provider's, and a code Codex knows where one applies."""
    message = provider_message(body, status)
    code = provider_code(body)
    if status == 429:
        code = "rate_limit_exceeded"
    elif code and "context" in code and "length" in code:
        code = "context_length_exceeded"
    return {"error": {"message": f"{provider}: {message}", "type": _TYPES.get(status, "server_error"),
                      "code": code, "param": None}}
