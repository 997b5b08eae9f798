"""What a profile file may not hold: keys, by their shape anywhere in it (a key id, a model, an
``[env]`` value, a description), credentials inside URLs, values of secret-named variables, and
``policy.inherit`` globs that would let routing or loader variables in without naming them.

``check_document`` runs on the parsed document before the rest of the validation, so the line a
user sees for a pasted key says where keys belong instead of a generic "not a URL".
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from ccswitch_tui.errors import ProfileError
from ccswitch_tui.policy.shapes import URL_CREDENTIALS_HINT, LazyPattern, holds_credential, looks_like_key, url_secrets

_LONG_TOKEN = re.compile(r"[A-Za-z0-9+/_.~-]{20}")
# names whose value is a credential whatever it looks like (a flag-like value aside)
SECRET_NAME_RE = LazyPattern(
    r"(?i).*(_API_KEY|_KEY|_TOKEN|_SECRET|_PASSWORD|_PASSWD|_PASS|_PAT|_CRED|_CREDS|_CREDENTIAL|_CREDENTIALS|"
    r"_AUTH|_COOKIE|_SESSION)$|^(API_KEY|APIKEY|TOKEN|SECRET|PASSWORD|PAT|CREDENTIALS|AUTH)$"
)
_FLAG_LIKE = LazyPattern(r"(?i)|[0-9]{1,6}|true|false|yes|no|on|off|none|bearer|basic|header")
ENV_TABLE_PATHS = ("env", "claude.env", "codex.env")

# Families of variables that steer where a client sends requests, which credentials it uses, or
# what code it loads: a policy.inherit glob reaching one of them is refused (name them in full).
ROUTING_PREFIXES = ("ANTHROPIC_", "CLAUDE_", "OPENAI_", "AZURE_OPENAI_", "CODEX_", "AWS_", "GOOGLE_",
                    "CLOUD_ML_", "VERTEX_", "GEMINI_", "LD_", "DYLD_", "PYTHON", "NODE_", "npm_config_",
                    "NPM_CONFIG_", "CCS_")
ROUTING_NAMES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy",
                 "all_proxy", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
                 "CURL_CA_BUNDLE", "BASH_ENV", "ENV", "PERL5OPT", "RUBYOPT", "JAVA_TOOL_OPTIONS",
                 "_JAVA_OPTIONS", "GIT_SSH_COMMAND")


def _leaves(data: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str]]:
    if isinstance(data, Mapping):
        for k, v in data.items():
            yield from _leaves(v, (*path, str(k)))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _leaves(v, (*path, str(i)))
    elif isinstance(data, str):
        yield path, data


def label(path: tuple[str, ...]) -> str:
    """``[provider].base_url``, ``[claude.env].X``, ``description``, ``[policy].inherit[0]``."""
    if len(path) == 1:
        return path[0]
    if path[-1].isdigit():
        return f"{label(path[:-1])}[{path[-1]}]"
    return f"[{'.'.join(path[:-1])}].{path[-1]}"


def value_problem(path: tuple[str, ...], value: str) -> str | None:
    """Why this value may not be in a profile file, or None."""
    stripped = value.strip()
    if stripped.startswith("env:") and (path == ("provider", "key") or path[:1] == ("secrets",)):
        return None  # names a variable of ccs's own environment: a name, not a value
    is_url = re.match(r"[A-Za-z][A-Za-z0-9+.-]*://\S*$", stripped) is not None
    if is_url:
        found = url_secrets(stripped)
        if found:
            return f"{label(path)} holds a credential in its URL ({', '.join(found)}); {URL_CREDENTIALS_HINT}"
    elif _LONG_TOKEN.search(value) and looks_like_key(value):
        if path == ("provider", "key"):
            return ("[provider].key looks like a key itself; a key id is a name (e.g. taotoken) and the key "
                    "goes into the keyring with `ccs key set ID`")
        return (f"{label(path)} holds a value shaped like a key; keys belong in the keyring: `ccs key set ID`, "
                f"then name the id in the profile ([provider].key, or a [secrets] entry VARIABLE = \"ID\")")
    in_env_table = len(path) >= 2 and ".".join(path[:-1]) in ENV_TABLE_PATHS
    if in_env_table and not is_url and holds_credential(value):
        return (f"{label(path)} holds a credential (a header, or a URL with a password); keys belong in the "
                "keyring: `ccs key set ID`, then a [secrets] entry naming the variable and that id")
    if in_env_table and SECRET_NAME_RE.fullmatch(path[-1]) and not _FLAG_LIKE.fullmatch(stripped):
        return (f"{label(path)} looks like a secret; keys belong in the keyring: `ccs key set ID`, "
                f"then a [secrets] entry {path[-1]} = \"ID\"")
    return None


def inherit_problem(pattern: str) -> str | None:
    """Why a ``policy.inherit`` glob is refused: it reaches routing, cloud or loader variables."""
    if not pattern.endswith("*"):
        return None
    stem = pattern[:-1]
    reached = [p + "*" for p in ROUTING_PREFIXES if p.startswith(stem) or stem.startswith(p)]
    reached += [n for n in ROUTING_NAMES if n.startswith(stem)]
    if not reached:
        return None
    shown = ", ".join(reached[:4]) + (" …" if len(reached) > 4 else "")
    return (f"[policy].inherit {pattern!r} would let in routing, cloud or loader variables ({shown}) without "
            "naming them; list each variable you mean by its full name (e.g. ANTHROPIC_LOG)")


def check_document(data: Any, where: str) -> None:
    """Raise ProfileError (``where: what; where keys belong``) for the first secret or open door."""
    if not isinstance(data, Mapping):
        return
    for path, value in _leaves(data):
        problem = value_problem(path, value)
        if problem:
            raise ProfileError(f"{where}: {problem}", field=label(path))
    policy = data.get("policy")
    inherit = policy.get("inherit") if isinstance(policy, Mapping) else None
    if isinstance(inherit, list):
        for pattern in inherit:
            problem = inherit_problem(pattern) if isinstance(pattern, str) else None
            if problem:
                raise ProfileError(f"{where}: {problem}", field="[policy].inherit")
