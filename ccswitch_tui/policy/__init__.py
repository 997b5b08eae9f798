"""The one policy: every "is this secret / routing / a loader / trust" question has its answer here.

Validation, ``ccs env`` (sh, dotenv, JSON, ``--diff``), the TUI, export, findings, request records
and the bridge's filters all ask this module; none keeps a rule of its own.

- Names: ``secret_name`` (a variable whose value is a credential whatever it looks like),
  ``known_non_secret`` (URLs, model ids, proxies' addresses: shown in clear).
- Values: ``credential_value`` (a key-shaped token, a URL with a credential, a credential header),
  from the shape and randomness rules in ``shapes``.
- Classes of variables (``families``): routing families (the shared ones, and each client's from its
  spec: a ``Families`` value the client registry builds and hands down; the policy keeps no copy),
  proxies, cloud switches, loaders (what changes the code a child runs; ``loaders``: which runtime
  runs it), TLS trust (which certificates it trusts).
- Display: ``mask``, ``shown`` for any variable, ``plan_shown`` for a variable of a launch plan.
- The clean environment: the base allowlist, ccs's markers, what passes from the parent.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from ccswitch_tui.model import LaunchPlan
from ccswitch_tui.policy.families import LOADER_NAMES as LOADER_NAMES  # the classes of variables are the policy's
from ccswitch_tui.policy.families import LOADER_PREFIXES as LOADER_PREFIXES
from ccswitch_tui.policy.families import NON_CLIENT_FAMILIES as NON_CLIENT_FAMILIES
from ccswitch_tui.policy.families import PROXY_VARS as PROXY_VARS
from ccswitch_tui.policy.families import SHARED_EFFECTS as SHARED_EFFECTS
from ccswitch_tui.policy.families import SHARED_FAMILIES as SHARED_FAMILIES
from ccswitch_tui.policy.families import SHARED_ONLY as SHARED_ONLY
from ccswitch_tui.policy.families import TRUST_VARS as TRUST_VARS
from ccswitch_tui.policy.families import Families as Families
from ccswitch_tui.policy.families import is_trust as is_trust
from ccswitch_tui.policy.loaders import RUNTIME_LABELS as RUNTIME_LABELS  # the loader questions are the policy's
from ccswitch_tui.policy.loaders import loader_runtimes as loader_runtimes
from ccswitch_tui.policy.redact import mask_token, redact_text
from ccswitch_tui.policy.shapes import SECRET_PARAM_RE, LazyPattern, holds_credential

# --- the clean environment -----------------------------------------------------------------------

BASE_ALLOWLIST = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TERMINFO", "COLORTERM", "LANG",
    "LANGUAGE", "LC_*", "TZ", "TMPDIR", "DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR",
    "SSH_AUTH_SOCK",
)
MARKERS = ("CCS_PROFILE", "CCS_TOOL", "CCS_LAUNCH_ID")

# --- secret names and values ---------------------------------------------------------------------

# A variable whose value is a credential whatever it looks like: a word of its name (split at "_")
# says so — anywhere in it (EXTRA_SECRET_THING, GH_PAT_2), unless the last word says the value is
# about the credential rather than the credential itself (GITHUB_TOKEN_FILE, SESSION_NAME, KEY_ID).
_SECRET_WORDS = frozenset({"KEY", "APIKEY", "TOKEN", "SECRET", "SECRETS", "PASSWORD", "PASSWD", "PASS", "PAT",
                           "CRED", "CREDS", "CREDENTIAL", "CREDENTIALS", "AUTH", "COOKIE", "COOKIES", "SESSION"})
_ABOUT_WORDS = frozenset({"NAME", "ID", "IDS", "PATH", "FILE", "DIR", "HINT", "TYPE", "METHOD", "MODE", "URL",
                          "URI", "HOST", "PORT", "LENGTH", "LEN", "TIMEOUT", "TTL", "EXPIRY", "EXPIRES", "ENABLED",
                          "DISABLED", "REQUIRED", "COUNT", "SIZE", "FORMAT", "KIND", "SCHEME", "PROVIDER", "HELPER",
                          "COMMAND", "CMD", "VAR", "ENV", "LOGIN", "LOGOUT", "STORE", "BACKEND", "THROUGH", "LABEL",
                          "TITLE", "PREFIX", "SUFFIX", "HEADER"})
# Terminal, session and locale variables every shell has: never a key, and useful to see in clear.
_HARMLESS = LazyPattern(
    r"TMUX|TMUX_PANE|TERM|TERM_PROGRAM(_VERSION)?|COLORTERM|VTE_VERSION|WINDOWID|SHLVL|COLUMNS|"
    r"LINES|HOSTNAME|LANG|LANGUAGE|LC_\w+|TZ|XDG_\w+|DISPLAY|WAYLAND_DISPLAY|SSH_TTY|"
    r"SSH_CONNECTION|SSH_CLIENT|DBUS_SESSION_BUS_ADDRESS|EDITOR|VISUAL|PAGER|LESS|LS_COLORS|"
    r"USER|LOGNAME|SHELL|HOME|PWD|OLDPWD|MAIL|STY|WINDOW|KONSOLE_\w+|WT_SESSION")
# Names whose values are addresses and ids: shown in clear (a credential inside a URL still masked).
_NON_SECRET = LazyPattern(r"(?i).*(_BASE_URL|_URL|_MODEL|_PROXY|_REGION)$|^CCS_MODEL$|^NO_PROXY$")
# Values that are flags, not credentials: `X_AUTH = "bearer"` names a scheme, holds no key.
_FLAG_LIKE = LazyPattern(r"(?i)|[0-9]{1,6}|true|false|yes|no|on|off|none|bearer|basic|header")
_USERINFO = LazyPattern(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]{0,31}://[^:/@\s]*):[^@/\s]*@")


def secret_name(name: str) -> bool:
    """A variable whose value is a credential whatever it looks like (``GH_PAT``, ``DB_PASSWD``,
    ``MY_GATEWAY_AUTH``, ``OPENAI_API_KEY``, ``EXTRA_SECRET_THING``); terminal and session variables
    (``WT_SESSION``) and names about a credential (``GITHUB_TOKEN_FILE``, ``SESSION_NAME``) are not."""
    words = [w for w in name.upper().split("_") if w]
    if not words or _HARMLESS.fullmatch(name) or not _SECRET_WORDS.intersection(words):
        return False
    return words[-1] in _SECRET_WORDS or words[-1] not in _ABOUT_WORDS


def flag_like(value: str) -> bool:
    """A value that names a setting rather than holding a credential (``bearer``, ``1``, ``off``)."""
    return bool(_FLAG_LIKE.fullmatch(value.strip()))


def secret_param(name: str) -> bool:
    """A URL query parameter or form field whose value is a credential (``key``, ``api_key``, ``sig``)."""
    return bool(SECRET_PARAM_RE.search(name))


def known_non_secret(name: str) -> bool:
    """Values safe to print unmasked: URLs, model ids, proxies' addresses."""
    return bool(_NON_SECRET.fullmatch(name)) and not secret_name(name)


def credential_value(value: str) -> bool:
    """A key-shaped token, a URL with a credential, or a credential header anywhere in ``value``."""
    return bool(value) and holds_credential(value)


_HEADER_WORDS = LazyPattern(r"(?i)auth|bearer|api[-_]?key|token|secret|password|cookie")


def is_secret(name: str, value: str) -> bool:
    """The one verdict on a variable: does it carry a credential? Named like a secret and set to
    more than a flag (``bearer``, ``1``); or a credential-shaped value under any name (a key, a URL
    with a password, a credential header); or a header list (``*_HEADERS``) that speaks of one."""
    if not value or not value.strip():
        return False
    if secret_name(name) and not flag_like(value):
        return True
    if credential_value(value):
        return True
    return name.upper().endswith("HEADERS") and bool(_HEADER_WORDS.search(value))


# --- display -------------------------------------------------------------------------------------


def mask(value: str) -> str:
    """``sk-…9f3a`` for keys of 16+ characters, ``****`` for shorter ones."""
    return mask_token(value)


def redact_url(value: str) -> str:
    """``http://user:****@proxy:3128``: a password inside a URL is never shown."""
    return str(_USERINFO.sub(r"\g<head>:****@", value))


def shown(name: str, value: str) -> str:
    """A variable's value as ccs prints it anywhere (``ccs env``, its diff, the TUI, findings):
    in clear unless ``is_secret``; a secret-named variable masked whole; in any other value only
    the credential masked (``http://***@proxy:3128``), the rest kept readable."""
    if not is_secret(name, value):
        return value
    if secret_name(name):
        return mask(value)
    if _USERINFO.search(value) and not credential_value(re.sub(r"://[^/@\s]*@", "://", value)):
        return redact_url(value)  # http://user:****@proxy:3128: the account stays readable
    redacted = redact_text(value)
    return redacted if redacted != value else mask(value)


def plan_is_secret(plan: LaunchPlan, name: str, value: str | None = None) -> bool:
    """A variable of a launch plan never shown in clear: the plan's key variables, and whatever
    ``is_secret`` says of any other (an inherited GITHUB_TOKEN, a key put under another name)."""
    value = plan.env.get(name, "") if value is None else value
    if not value:
        return False
    return name in plan.secret_names or is_secret(name, value)


def plan_shown(plan: LaunchPlan, name: str, value: str | None = None) -> str:
    """A plan's variable (or ``value``, e.g. the parent's side of a diff) as ccs prints it: the
    plan's key variables masked whole, the rest as ``shown`` says."""
    value = plan.env.get(name, "") if value is None else value
    if name in plan.secret_names and value:
        return mask(value)
    return shown(name, value)


def masked_env(plan: LaunchPlan) -> dict[str, str]:
    return {k: plan_shown(plan, k) for k in plan.env}


# --- classes of variables ------------------------------------------------------------------------

# Globs in policy.inherit may not reach these families either (name each variable in full).
_GLOB_GUARDED_PREFIXES = ("PYTHON", "NODE_", "npm_config_", "NPM_CONFIG_", "CCS_", "PERL", "RUBY", "JAVA_",
                          "GIT_SSH", "SSL_", "AWS_", "GOOGLE_", "CLOUD_ML_", "VERTEX_")


def shared_families() -> tuple[tuple[str, str], ...]:
    """The families no single client owns, (name, regex): a client's family may not overlap them."""
    return SHARED_FAMILIES


def is_proxy(name: str) -> bool:
    return name in PROXY_VARS


def matters(name: str, families: Families) -> bool:
    """Whether a change to this variable can change where requests go, with which key, or what code
    runs: routing variables (proxies included), secrets and loaders. The rest is harmless in a diff."""
    return families.routing_family(name) is not None or secret_name(name) or families.is_loader(name)


def plan_matters(plan: LaunchPlan, name: str, families: Families) -> bool:
    """``matters``, knowing the plan's own routing names."""
    return name in plan.routing_names or matters(name, families)


def inherit_problem(pattern: str, families: Families) -> str | None:
    """Why a ``policy.inherit`` glob is refused: it reaches routing, cloud, loader or trust
    variables without naming them."""
    if not pattern.endswith("*"):
        return None
    stem = pattern[:-1]
    prefixes, names = families.literal_heads()
    prefixes = prefixes + LOADER_PREFIXES + _GLOB_GUARDED_PREFIXES
    reached = [p + "*" for p in dict.fromkeys(prefixes) if p.startswith(stem) or stem.startswith(p)]
    fixed = (*names, *sorted(PROXY_VARS), *sorted(LOADER_NAMES), *sorted(TRUST_VARS))
    reached += [n for n in dict.fromkeys(fixed) if n.startswith(stem)]
    if not reached:
        return None
    shown_ = ", ".join(reached[:4]) + (" …" if len(reached) > 4 else "")
    return (f"[policy].inherit {pattern!r} would let in routing, cloud, loader or trust variables ({shown_}) "
            "without naming them; list each variable you mean by its full name (e.g. ANTHROPIC_LOG)")


_VAR_NAME = LazyPattern(r"[A-Za-z_][A-Za-z0-9_]*")


def custom_name_problem(name: str, role: str, families: Families) -> str | None:
    """Why a variable name a profile declares for its key (``role`` "key") or base URL ("base_url")
    cannot be one: not a variable name, a known variable of a family (``OPENAI_API_KEY`` is exported
    by the family's own name), a proxy, loader, trust or ccs variable, one the clean environment keeps
    from the shell; a key under a name the policy would not mask everywhere, or a URL under a name it
    would mask. None when the name is fine."""
    if not isinstance(name, str) or not _VAR_NAME.fullmatch(name):
        return f"{name!r} is not a variable name (letters, digits and _, not starting with a digit)"
    family = families.routing_family(name)
    if family is not None:
        return f"{name} is a known variable of the {family} family (read by {families.effect(family)}); " \
               "export that family by its name instead"
    if families.is_loader(name):
        return f"{name} changes what code a program loads; it cannot carry a key or a URL"
    if is_trust(name):
        return f"{name} says which certificates a program trusts; it cannot carry a key or a URL"
    if name in MARKERS or name.upper().startswith("CCS_") or matches_any(name, BASE_ALLOWLIST):
        return f"{name} is a variable ccs sets or keeps itself; pick a name of your own"
    if families.cloud_switch(name):
        return f"{name} switches a client to a cloud platform; pick a name of your own"
    if role == "key" and not secret_name(name):
        return f"{name} does not read as a secret name, so not every output would mask it; " \
               "name it like one (…_API_KEY, …_TOKEN)"
    if role == "base_url" and secret_name(name):
        return f"{name} reads as a secret name; name the base URL like one (…_BASE_URL)"
    return None


@functools.lru_cache(maxsize=256)
def _globs(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """The shell-style globs as one test (``fnmatch.fnmatchcase`` of each, at once): plain names and
    ``PREFIX*`` globs (all of the base allowlist) by set and prefix, the rest by one regex, compiled
    only when there is such a glob."""
    plain = frozenset(p for p in patterns if not any(c in p for c in "*?["))
    prefixes = tuple(p[:-1] for p in patterns if p.endswith("*") and not any(c in p[:-1] for c in "*?["))
    others = [p for p in patterns if p not in plain and not (p.endswith("*") and p[:-1] in prefixes)]
    rest = re.compile("|".join(fnmatch.translate(p) for p in others)).match if others else None

    def matches(name: str) -> bool:
        return name in plain or name.startswith(prefixes) or (rest is not None and rest(name) is not None)
    return matches


def matches_any(name: str, patterns: Iterable[str]) -> bool:
    """Whether ``name`` matches one of the shell-style globs (case-sensitive, as ``fnmatchcase``)."""
    return _globs(tuple(patterns))(name)


def inherited_env(parent_env: Mapping[str, str], inherit: Sequence[str] = (), trust: bool = True
                  ) -> tuple[dict[str, str], dict[str, str]]:
    """What passes from the parent: the base allowlist and the profile's ``policy.inherit``; and,
    separately, the TLS trust variables (unless the profile drops them)."""
    kept_by = _globs((*BASE_ALLOWLIST, *inherit))
    kept = {k: v for k, v in parent_env.items() if kept_by(k)}
    trusted = {k: v for k, v in parent_env.items() if trust and is_trust(k) and k not in kept}
    return kept, trusted
