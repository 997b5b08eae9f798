"""The one policy: every "is this secret / routing / a loader / trust" question has its answer here.

Validation, ``ccs env`` (sh, dotenv, JSON, ``--diff``), the TUI, export, findings, request records
and the bridge's filters all ask this module; none keeps a rule of its own.

- Names: ``secret_name`` (a variable whose value is a credential whatever it looks like),
  ``known_non_secret`` (URLs, model ids, proxies' addresses: shown in clear).
- Values: ``credential_value`` (a key-shaped token, a URL with a credential, a credential header),
  from the shape and randomness rules in ``shapes``.
- Classes of variables: routing families (the shared ones here, each client's from its spec, which
  the registry hands in with ``register_client_families``), proxies, cloud switches, loaders (what
  changes the code a child runs; ``loaders``: which runtime runs it), TLS trust (which certificates
  it trusts).
- Display: ``mask``, ``shown`` for any variable, ``plan_shown`` for a variable of a launch plan.
- The clean environment: the base allowlist, ccs's markers, what passes from the parent.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence

from ccswitch_tui.model import LaunchPlan
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


def plan_routing_family(plan: LaunchPlan, name: str) -> str | None:
    """``routing_family``, knowing the names the plan's profile declares for a family itself
    (``TAOTOKEN_BASE_URL`` exported as an OpenAI base URL is of the openai family in that plan)."""
    return plan.routing_names.get(name) or routing_family(name)


def plan_matters(plan: LaunchPlan, name: str) -> bool:
    """``matters``, knowing the plan's own routing names."""
    return name in plan.routing_names or matters(name)


def masked_env(plan: LaunchPlan) -> dict[str, str]:
    return {k: plan_shown(plan, k) for k in plan.env}


# --- classes of variables ------------------------------------------------------------------------

PROXY_VARS = frozenset(
    {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy"}
)
# Which certificates a child trusts: carried from the shell by default (a TLS-inspecting corporate
# proxy needs them), shown as "trust", dropped with [policy] trust = false.
TRUST_VARS = frozenset({
    "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "AWS_CA_BUNDLE", "PIP_CERT", "NODE_USE_SYSTEM_CA",
})
# What changes the code a child loads: the clients built with Bun run a BUN_OPTIONS=--preload script,
# those launched by Node a NODE_OPTIONS=--require one, every dynamically linked one honours LD_PRELOAD
# (measured with the pinned clients; the README's Clients section says which is which). The rest are
# the interpreters' documented hooks, for the commands the clients run (PYTHONWARNINGS imports the
# module a warning category names). Which runtime reads which: ``loaders.loader_runtimes``.
LOADER_PREFIXES = ("LD_", "DYLD_", "BUN_")
LOADER_NAMES = frozenset({
    "NODE_OPTIONS", "NODE_PATH", "NODE_TLS_REJECT_UNAUTHORIZED", "NODE_REPL_EXTERNAL_MODULE", "PYTHONSTARTUP",
    "PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONINSPECT", "PYTHONBREAKPOINT", "PYTHONWARNINGS", "BASH_ENV",
    "ENV", "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS", "GIT_SSH_COMMAND", "GIT_EXEC_PATH", "PROMPT_COMMAND", "ZDOTDIR",
})
# Globs in policy.inherit may not reach these families either (name each variable in full).
_GLOB_GUARDED_PREFIXES = ("PYTHON", "NODE_", "npm_config_", "NPM_CONFIG_", "CCS_", "PERL", "RUBY", "JAVA_",
                          "GIT_SSH", "SSL_", "AWS_", "GOOGLE_", "CLOUD_ML_", "VERTEX_")

# Families no single client owns; each client's spec adds its own (``families`` in tools/<name>).
_SHARED_FAMILIES: tuple[tuple[str, str], ...] = (
    ("openai", r"OPENAI_.*|AZURE_OPENAI_.*"),
    ("proxy", "|".join(re.escape(v) for v in sorted(PROXY_VARS))),
    ("cloud", r"AWS_PROFILE|AWS_REGION|AWS_ACCESS_KEY_ID|AWS_SECRET_ACCESS_KEY|AWS_SESSION_TOKEN|"
              r"AWS_BEARER_TOKEN_BEDROCK|GOOGLE_APPLICATION_CREDENTIALS|CLOUD_ML_REGION|"
              r"GOOGLE_CLOUD_PROJECT|GOOGLE_CLOUD_LOCATION"),  # ANTHROPIC_VERTEX_PROJECT_ID: Claude Code's family
)
SHARED_EFFECTS = {
    "openai": "OpenAI SDK programs",
    "proxy": "every tool (requests go through the proxy)",
    "cloud": "cloud platforms' SDKs, and the clients a cloud switch turns to them",
}
NON_CLIENT_FAMILIES = ("proxy", "cloud")


def shared_families() -> tuple[tuple[str, str], ...]:
    """The families no single client owns, (name, regex): a client's family may not overlap them."""
    return _SHARED_FAMILIES


class _Clients:
    """What the client specs declare, handed in by the registry (``tools/__init__``) when it loads."""

    families: tuple[tuple[str, str], ...] = ()  # (family, regex)
    effects: dict[str, str] = {}
    switches: tuple[str, ...] = ()  # regexes of variables that switch a client to a cloud platform
    loaders: frozenset[str] = frozenset()  # variables a client's own launcher reads to run other code
    compiled: list[tuple[str, re.Pattern[str]]] | None = None
    switch_re: re.Pattern[str] | None = None
    loaded = False


def register_client_families(families: Iterable[tuple[str, str]], effects: Mapping[str, str],
                             switches: Iterable[str], loaders: Iterable[str] = ()) -> None:
    """The registry hands in every client's families (client first, so their names win), who reads
    each family, the cloud switches and the clients' own loader variables. Called once, when the
    registry loads."""
    _Clients.families = tuple(families)
    _Clients.loaders = frozenset(loaders)
    _Clients.effects = dict(effects)
    _Clients.switches = tuple(switches)
    _Clients.compiled = None
    _Clients.switch_re = None
    _Clients.loaded = True


def _patterns() -> list[tuple[str, re.Pattern[str]]]:
    if _Clients.compiled is None:
        if not _Clients.loaded:
            raise RuntimeError("the client registry is not loaded: import ccswitch_tui.tools before asking the policy")
        _Clients.compiled = [(f, re.compile(rx)) for f, rx in (*_Clients.families, *_SHARED_FAMILIES)]
    return _Clients.compiled


def families() -> tuple[str, ...]:
    return tuple(dict.fromkeys(f for f, _ in _patterns()))


def client_families() -> tuple[str, ...]:
    """The families whose variables name a client's endpoint or key (not proxies, not cloud switches)."""
    return tuple(f for f in families() if f not in NON_CLIENT_FAMILIES)


def family_effect(family: str | None) -> str:
    """Which tools read a family's variables, for messages."""
    _patterns()
    if family in _Clients.effects:
        return _Clients.effects[family]
    return SHARED_EFFECTS.get(family or "", "some tools")


def routing_family(name: str) -> str | None:
    """Which family a routing variable belongs to (a client's, openai, proxy, cloud), else None."""
    for family, pattern in _patterns():
        if pattern.fullmatch(name):
            return family
    return None


def cloud_switch(name: str) -> bool:
    """A variable that turns a client to a cloud platform (every request goes there)."""
    _patterns()
    if _Clients.switch_re is None:
        _Clients.switch_re = re.compile("|".join(_Clients.switches) or r"(?!)")
    return bool(_Clients.switch_re.fullmatch(name))


def is_proxy(name: str) -> bool:
    return name in PROXY_VARS


def is_trust(name: str) -> bool:
    return name in TRUST_VARS


def is_loader(name: str) -> bool:
    return name in LOADER_NAMES or name in _Clients.loaders or name.startswith(LOADER_PREFIXES)


def client_loader(name: str) -> bool:
    """A variable a client's own launcher reads to run other code (``KILO_BIN_PATH``): its spec's ``loaders``."""
    return name in _Clients.loaders



def kind(name: str) -> str | None:
    """What a variable does to a launch, when it is one ccs names: cloud-switch, routing, proxy,
    cloud, loader, trust; None for ordinary variables. A client's own loader variable is a loader
    first, although its name is in the client's routing family."""
    if name in _Clients.loaders:
        return "loader"
    if cloud_switch(name):
        return "cloud-switch"
    family = routing_family(name)
    if family in client_families():
        return "routing"
    if family in NON_CLIENT_FAMILIES:
        return family
    if is_trust(name):
        return "trust"
    return "loader" if is_loader(name) else None


def matters(name: str) -> bool:
    """Whether a change to this variable can change where requests go, with which key, or what code
    runs: routing variables (proxies included), secrets and loaders. The rest is harmless in a diff."""
    return routing_family(name) is not None or secret_name(name) or is_loader(name)


def _literal_heads() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Every family's alternatives as literal prefixes (``OPENAI_`` of ``OPENAI_.*``) and names."""
    prefixes: list[str] = []
    names: list[str] = []
    for _, rx in (*_Clients.families, *_SHARED_FAMILIES, *(("switch", s) for s in _Clients.switches)):
        for alt in rx.split("|"):
            alt = alt.replace("\\", "")
            if alt.endswith(".*") and not re.search(r"[][().*+?{}^$]", alt[:-2]):
                prefixes.append(alt[:-2])
            elif not re.search(r"[][().*+?{}^$]", alt):
                names.append(alt)
            else:  # a pattern ccs cannot read as a prefix: guard what comes before its first operator
                head = re.split(r"[][().*+?{}^$|]", alt, maxsplit=1)[0]
                if head:
                    prefixes.append(head)
    return tuple(dict.fromkeys(prefixes)), tuple(dict.fromkeys(names))


def routing_prefilter() -> re.Pattern[bytes]:
    """A bytes pattern that finds a routing variable in a raw ``/proc/PID/environ``: a cheap first
    pass before parsing it, built from the same families (so no client is missed)."""
    _patterns()
    prefixes, names = _literal_heads()
    alts = [re.escape(p) for p in prefixes] + [re.escape(n) + "=" for n in names]
    return re.compile(("(?:^|\0)(?:" + "|".join(alts) + ")").encode())


def inherit_problem(pattern: str) -> str | None:
    """Why a ``policy.inherit`` glob is refused: it reaches routing, cloud, loader or trust
    variables without naming them."""
    if not pattern.endswith("*"):
        return None
    stem = pattern[:-1]
    _patterns()
    prefixes, names = _literal_heads()
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


def custom_name_problem(name: str, role: str) -> str | None:
    """Why a variable name a profile declares for its key (``role`` "key") or base URL ("base_url")
    cannot be one: not a variable name, a known variable of a family (``OPENAI_API_KEY`` is exported
    by the family's own name), a proxy, loader, trust or ccs variable, one the clean environment keeps
    from the shell; a key under a name the policy would not mask everywhere, or a URL under a name it
    would mask. None when the name is fine."""
    if not isinstance(name, str) or not _VAR_NAME.fullmatch(name):
        return f"{name!r} is not a variable name (letters, digits and _, not starting with a digit)"
    family = routing_family(name)
    if family is not None:
        return f"{name} is a known variable of the {family} family (read by {family_effect(family)}); " \
               "export that family by its name instead"
    if is_loader(name):
        return f"{name} changes what code a program loads; it cannot carry a key or a URL"
    if is_trust(name):
        return f"{name} says which certificates a program trusts; it cannot carry a key or a URL"
    if name in MARKERS or name.upper().startswith("CCS_") or matches_any(name, BASE_ALLOWLIST):
        return f"{name} is a variable ccs sets or keeps itself; pick a name of your own"
    if cloud_switch(name):
        return f"{name} switches a client to a cloud platform; pick a name of your own"
    if role == "key" and not secret_name(name):
        return f"{name} does not read as a secret name, so not every output would mask it; " \
               "name it like one (…_API_KEY, …_TOKEN)"
    if role == "base_url" and secret_name(name):
        return f"{name} reads as a secret name; name the base URL like one (…_BASE_URL)"
    return None


def matches_any(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def inherited_env(parent_env: Mapping[str, str], inherit: Sequence[str] = (), trust: bool = True
                  ) -> tuple[dict[str, str], dict[str, str]]:
    """What passes from the parent: the base allowlist and the profile's ``policy.inherit``; and,
    separately, the TLS trust variables (unless the profile drops them)."""
    patterns = (*BASE_ALLOWLIST, *inherit)
    kept = {k: v for k, v in parent_env.items() if matches_any(k, patterns)}
    trusted = {k: v for k, v in parent_env.items() if trust and is_trust(k) and k not in kept}
    return kept, trusted
