"""A provider's error, whatever its shape, read into what it says and what it is: its class.

Providers write errors in many shapes, as an HTTP error or inside a stream: OpenAI's
``{"error": {...}}``, a bare string, Gemini's list, MiniMax's ``base_resp`` in a 200 answer, vLLM's
integer ``code``, an HTML page from a proxy. ``read_error`` reads any of them into one
``ProviderError``: the provider's message, its code as a string, and a class:

    context_length   the conversation does not fit the model's window
    auth             the key or the account was refused (401, 402, 403, no balance)
    invalid_request  anything else a retry cannot fix (400, 404, 413, 422, ...)
    content_filter   the provider's content policy stopped the request or the answer
    rate_limit       429 and its in-stream forms
    overloaded       529, "overloaded", "at capacity"
    server           5xx, 408, a stream cut short

A retry can fix only the last three. The class goes into the request's record (``error_class``),
so a round of reruns counts them; the translation for Codex (``translate.errors``) turns it into
the answer Codex acts on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ccswitch_tui.error_pages import page_error
from ccswitch_tui.valueclass import valueclass

MAX_MESSAGE = 2000

CONTEXT_LENGTH = "context_length"
AUTH = "auth"
INVALID_REQUEST = "invalid_request"
CONTENT_FILTER = "content_filter"
RATE_LIMIT = "rate_limit"
OVERLOADED = "overloaded"
SERVER = "server"
CLASSES = (CONTEXT_LENGTH, AUTH, INVALID_REQUEST, CONTENT_FILTER, RATE_LIMIT, OVERLOADED, SERVER)
RETRYABLE = frozenset({RATE_LIMIT, OVERLOADED, SERVER})

# The code a record names when the provider's own code says nothing of the class (a number, none).
RECORD_CODES = {CONTEXT_LENGTH: "context_length_exceeded", AUTH: "authentication_error",
                INVALID_REQUEST: "invalid_request_error", CONTENT_FILTER: "content_filter",
                RATE_LIMIT: "rate_limit_exceeded", OVERLOADED: "overloaded", SERVER: "server_error"}
# Codes (lower case) that name a class by themselves, in the dialects of the providers ccs serves.
_CODE_CLASSES: dict[str, str] = {
    **dict.fromkeys(("context_length_exceeded", "context_window_exceeded", "model_context_window_exceeded",
                     "string_above_max_length", "request_too_large_for_context", "1261"), CONTEXT_LENGTH),
    **dict.fromkeys(("content_filter", "content_policy_violation", "content_filtered", "data_inspection_failed",
                     "datainspectionfailed", "sensitive", "safety", "prohibited_content", "1301"), CONTENT_FILTER),
    **dict.fromkeys(("invalid_api_key", "authentication_error", "authentication_failed", "unauthorized",
                     "unauthenticated", "permission_denied", "permission_error", "forbidden", "insufficient_quota",
                     "insufficient_balance", "insufficient_user_quota", "billing_hard_limit_reached",
                     "account_deactivated", "access_denied", "authorized_error", "invalid_authentication",
                     "1113"), AUTH),
    **dict.fromkeys(("rate_limit_exceeded", "rate_limit_error", "rate_limited", "too_many_requests",
                     "resource_exhausted", "requests_limit", "tokens_limit", "slow_down"), RATE_LIMIT),
    **dict.fromkeys(("overloaded", "overloaded_error", "server_overloaded", "server_is_overloaded",
                     "engine_overloaded", "model_overloaded", "service_unavailable", "unavailable"), OVERLOADED),
    **dict.fromkeys(("invalid_request_error", "invalid_request", "bad_request", "badrequesterror",
                     "invalid_argument", "invalid_parameter", "invalid_parameter_error", "model_not_found",
                     "not_found", "not_found_error", "invalid_prompt", "unsupported_parameter",
                     "request_too_large", "failed_precondition", "unprocessable_entity"), INVALID_REQUEST),
    **dict.fromkeys(("server_error", "internal_error", "internal_server_error", "api_error", "internalservererror",
                     "timeout", "deadline_exceeded", "upstream_error", "bad_gateway", "gateway_timeout",
                     "stream_closed", "stream_error", "provider_error"), SERVER),
}
# MiniMax's ``base_resp.status_code`` numbers (a 200 answer carrying them).
_BASE_RESP_CLASSES: dict[object, str] = {
    1004: AUTH, 2049: AUTH, 1008: AUTH, 1002: RATE_LIMIT, 1039: RATE_LIMIT, 1041: RATE_LIMIT,
    1026: CONTENT_FILTER, 1027: CONTENT_FILTER, 2013: INVALID_REQUEST, 1042: INVALID_REQUEST,
    1000: SERVER, 1001: SERVER, 1013: SERVER}
# What a message says, when its code does not (or there is none).
_CONTEXT_WORDS = re.compile(
    r"context[ _-]?(?:length|window)|maximum context|prompt is too long|too many tokens|input is too long|"
    r"token limit|maximum number of tokens|exceeds? (?:the )?max(?:imum)? length|超长|上下文", re.IGNORECASE)
_FILTER_WORDS = re.compile(r"content management policy|content[ _-]?filter|inappropriate content|content policy|"
                           r"敏感内容|不安全", re.IGNORECASE)
_RATE_WORDS = re.compile(r"rate[ _-]?limit|too many requests|requests per min", re.IGNORECASE)
_OVERLOAD_WORDS = re.compile(r"overloaded|at capacity|over capacity|server is busy|访问量过大", re.IGNORECASE)


@valueclass(frozen=True)
class ProviderError:
    """One provider error: its message (the provider's words), its code as a string, its class,
    and the HTTP status it came with (an in-stream error's integer code counts as one)."""

    message: str
    error_class: str
    code: str | None = None  # the provider's own (its first that is not the HTTP status)
    status: int | None = None
    codes: tuple[str, ...] = ()  # every code the provider gave (code, type, status, MiniMax's number)

    @property
    def retryable(self) -> bool:
        return self.error_class in RETRYABLE

    @property
    def record_code(self) -> str:
        """The code a record names: the provider's, when it says what the class says; else the
        class's own (vLLM's ``400`` for a context-length error reads ``context_length_exceeded``,
        Groq's ``rate_limit_exceeded`` on a 413 ``invalid_request_error``)."""
        for code in (self.code, *self.codes):
            if code and _CODE_CLASSES.get(code.lower()) == self.error_class:
                return code
        return RECORD_CODES[self.error_class]

    def record_text(self) -> str:
        """``code: message`` on one line, the code left out when the message already says it, a
        provider's own number (MiniMax's 1004) kept beside the class's code."""
        text = " ".join(self.message.split())
        code = self.record_code
        if self.code and self.code.isdigit() and self.code != str(self.status) and self.code != code:
            code = f"{code} ({self.code})"
        return text if code.lower() in text.lower() else f"{code}: {text}"

    def named(self, provider: str) -> str:
        """The provider's message, named as the provider's (what the user is shown)."""
        return f"{provider}: {self.message}" if provider else self.message


# --- reading ---------------------------------------------------------------------------------------

def read_error(body: bytes | str | Mapping[str, Any] | list[Any] | None, status: int | None = None) -> ProviderError:
    """The error in whatever body a provider sent with ``status`` (JSON in several shapes, an HTML
    page, text), read and classed."""
    value: Any = body
    page: str | None = None
    if isinstance(body, (bytes, str)):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        try:
            value = json.loads(text)
        except ValueError:
            page = page_error(text, status)
            value = page if page is not None else " ".join(text.split())
    error = _error_object(value)
    message = _find_message(value)[:MAX_MESSAGE] or (f"HTTP {status}" if status else "unknown error")
    codes = _codes(value, error)
    if status is None or status < 400:  # an in-stream error's code may be the HTTP status it stands for
        status = next((int(c) for c in codes if c.isdigit() and 400 <= int(c) < 600), None)
    base = value.get("base_resp") if isinstance(value, Mapping) else None
    base_class = _BASE_RESP_CLASSES.get(base.get("status_code")) if isinstance(base, Mapping) else None
    cls = base_class or classify(status, codes, message)
    code = next((c for c in codes if not (c.isdigit() and status is not None and int(c) == status)), None)
    return ProviderError(message=message, error_class=cls, code=code, status=status, codes=tuple(codes))


def classify(status: int | None, codes: list[str] | tuple[str, ...], message: str) -> str:  # noqa: C901
    """The class of an error from its HTTP status (if any), its codes and its message. A context
    window or a content filter is recognised whatever the status; then the key and the account;
    then the status decides; without one, the codes and the words."""
    lowered = [c.lower() for c in codes]
    named = [_CODE_CLASSES[c] for c in lowered if c in _CODE_CLASSES]
    if CONTEXT_LENGTH in named or _CONTEXT_WORDS.search(message):
        return CONTEXT_LENGTH
    if CONTENT_FILTER in named or _FILTER_WORDS.search(message):
        return CONTENT_FILTER
    if AUTH in named or status in (401, 402, 403):
        return AUTH
    if status is not None and status >= 400:
        if status == 429:
            return RATE_LIMIT
        if status == 529 or (status >= 500 and (OVERLOADED in named or _OVERLOAD_WORDS.search(message))):
            return OVERLOADED
        if status >= 500 or status in (408, 409, 425):
            return SERVER
        return INVALID_REQUEST
    for cls in (RATE_LIMIT, OVERLOADED, INVALID_REQUEST, SERVER):
        if cls in named:
            return cls
    if _RATE_WORDS.search(message):
        return RATE_LIMIT
    if _OVERLOAD_WORDS.search(message):
        return OVERLOADED
    return SERVER


def classify_text(status: int | None, text: str | None) -> str | None:
    """The class of an error known only as a line of text (a recorded pass-through answer:
    ``type: code: message``) and the status it came with; None when there is no error."""
    if not text and not (status and status >= 400):
        return None
    text = text or ""
    words = re.findall(r"[A-Za-z_]+|\d+", text)
    return classify(status if status and status >= 400 else None, words, text)


def _error_object(value: Any) -> Any:
    if isinstance(value, list) and value:
        return _error_object(value[0])  # Gemini: a list of error objects
    if isinstance(value, Mapping):
        error = value.get("error")
        if isinstance(error, Mapping):
            return error
    return value


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


def _codes(value: Any, error: Any) -> list[str]:
    """The error's codes as strings, most telling first: ``code``, ``type``, ``status`` (Gemini),
    MiniMax's ``base_resp.status_code``."""
    out: list[str] = []
    if isinstance(error, Mapping):
        for key in ("code", "type", "status"):
            code = error.get(key)
            if isinstance(code, bool) or code is None or code == "":
                continue
            if isinstance(code, (str, int)):
                out.append(str(code).strip())
    base = value.get("base_resp") if isinstance(value, Mapping) else None
    if isinstance(base, Mapping) and isinstance(base.get("status_code"), int) and base["status_code"] != 0:
        out.append(str(base["status_code"]))
    return [c for c in out if c and len(c) <= 64]  # a code, not a text a provider put in its place


def provider_message(body: bytes | str | Mapping[str, Any] | None, status: int | None = None) -> str:
    """The human message in whatever error body a provider sent."""
    return read_error(body, status).message


