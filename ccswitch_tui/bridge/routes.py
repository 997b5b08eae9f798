"""Which route a request of the child is for, and whether its path stays inside that route.

A route is a path prefix: ``{bridge}/{name}/rest`` stands for ``{upstream}/rest``. A ``rest`` that
climbs above its own root (``/openai/../../etc/passwd``) would reach whatever else the upstream's
host serves, with the real key: such a path is refused, in whatever spelling an upstream could
read as a dot segment — percent-encoded dots and slashes (``%2e%2e``, ``..%2f``, twice encoded as
``%252e``), backslashes (which some servers read as slashes) and ``..;params``.
"""

from __future__ import annotations

import re
from typing import Literal

# The API a route's child speaks, as the route declares it (the bridge answers its own errors in
# that API's shape): Anthropic's Messages API; the OpenAI-compatible family (Chat Completions,
# Responses, embeddings, models: one base URL carries them all); the Responses API a translating
# route turns into Chat Completions; or one the bridge does not know (answered as OpenAI's).
Dialect = Literal["anthropic-messages", "openai", "openai-responses", "unknown"]
ANTHROPIC_MESSAGES: Dialect = "anthropic-messages"

_ENCODED = re.compile(r"%(?:2[eEfF]|5[cC]|25)")
_DECODED = {"%2e": ".", "%2f": "/", "%5c": "/", "%25": "%"}
_ROUNDS = 3  # an encoding of an encoding of an encoding is still read


def split_target(target: str) -> tuple[str, str]:
    """``/name/rest?query`` → (``name``, ``/rest?query``); ``/name?query`` → (``name``, ``?query``)."""
    name, _, rest = target[1:].partition("/")
    name, sep, query = name.partition("?")  # a bare /route?x=1
    return name, ("/" + rest if not sep else "?" + query)


def leaves_route(rest: str) -> bool:
    """Whether ``rest`` (a route's path, query included) climbs above the route's root once its dot
    segments are resolved, in any spelling of them."""
    path = rest.split("?", 1)[0].split("#", 1)[0]
    for _ in range(_ROUNDS):
        if "%" not in path:
            break
        path = _ENCODED.sub(lambda m: _DECODED[m.group(0).lower()], path)
    depth = 0
    for segment in path.replace("\\", "/").split("/"):
        segment = segment.split(";", 1)[0]  # a path parameter (..;x) does not stop a server reading ..
        if segment == "..":
            depth -= 1
            if depth < 0:
                return True
        elif segment not in ("", "."):
            depth += 1
    return False
