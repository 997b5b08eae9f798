"""Classes of variables, and the routing families as a value.

A routing family names the variables that steer one reader: a client's own (``ANTHROPIC_*`` for
Claude Code, from its spec), the OpenAI SDKs' (``OPENAI_*``), proxies, cloud platforms. The shared
families are declared here; the clients' come from the client registry (``tools``), which builds a
``Families`` from the specs it loaded and hands it down to whoever asks the policy's questions about
routing, cloud switches and loaders. The policy keeps no copy of its own: a ``Families`` is a value,
and two registries (the tests' fake client registered, or not) give two values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from ccswitch_tui.model import LaunchPlan

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
# (measured with the pinned clients; docs/clients.md says which is which). The rest are
# the interpreters' documented hooks, for the commands the clients run (PYTHONWARNINGS imports the
# module a warning category names). Which runtime reads which: ``loaders.loader_runtimes``.
LOADER_PREFIXES = ("LD_", "DYLD_", "BUN_")
LOADER_NAMES = frozenset({
    "NODE_OPTIONS", "NODE_PATH", "NODE_TLS_REJECT_UNAUTHORIZED", "NODE_REPL_EXTERNAL_MODULE", "PYTHONSTARTUP",
    "PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONINSPECT", "PYTHONBREAKPOINT", "PYTHONWARNINGS", "BASH_ENV",
    "ENV", "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS", "GIT_SSH_COMMAND", "GIT_EXEC_PATH", "PROMPT_COMMAND", "ZDOTDIR",
})

# Families no single client owns; each client's spec adds its own (``families`` in tools/<name>).
SHARED_FAMILIES: tuple[tuple[str, str], ...] = (
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


def is_trust(name: str) -> bool:
    return name in TRUST_VARS


class Families:
    """The routing families the policy answers from: the clients' (client first, so their names win)
    and the shared ones, who reads each, the variables that switch a client to a cloud platform, and
    the clients' own loader variables. Built by the client registry; its patterns are compiled on the
    first question."""

    def __init__(self, clients: Iterable[tuple[str, str]] = (), effects: Mapping[str, str] | None = None,
                 switches: Iterable[str] = (), loaders: Iterable[str] = ()):
        self.client = tuple(clients)  # (family, regex) of the clients
        self.effects = dict(effects or {})
        self.switches = tuple(switches)  # regexes of variables that switch a client to a cloud platform
        self.loaders = frozenset(loaders)  # variables a client's own launcher reads to run other code
        self._lazy: list[tuple[str, str, tuple[str, ...] | None]] | None = None  # (family, regex, heads)
        self._each: dict[str, re.Pattern[str]] = {}
        self._switch_re: re.Pattern[str] | None = None
        self._prefilter: re.Pattern[bytes] | None = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Families) and (self.client, self.effects, self.switches, self.loaders) == (
            other.client, other.effects, other.switches, other.loaders)

    def __hash__(self) -> int:
        return hash((self.client, self.switches, self.loaders))

    def __repr__(self) -> str:
        return f"Families({[f for f, _ in self.client]!r})"

    def names(self) -> tuple[str, ...]:
        """Every family, the clients' first."""
        return tuple(dict.fromkeys(f for f, _ in (*self.client, *SHARED_FAMILIES)))

    def client_families(self) -> tuple[str, ...]:
        """The families whose variables name a client's endpoint or key (not proxies, not cloud switches)."""
        return tuple(f for f in self.names() if f not in NON_CLIENT_FAMILIES)

    def effect(self, family: str | None) -> str:
        """Which tools read a family's variables, for messages."""
        if family in self.effects:
            return self.effects[family]
        return SHARED_EFFECTS.get(family or "", "some tools")

    def routing_family(self, name: str) -> str | None:
        """Which family a routing variable belongs to (a client's, openai, proxy, cloud), else None.
        A family's regex is compiled only for a name that starts with one of its literal heads (most
        names start with none: a launch compiles one or two of the families' patterns, not all)."""
        if self._lazy is None:
            self._lazy = [(f, rx, _heads(rx)) for f, rx in (*self.client, *SHARED_FAMILIES)]
        for family, rx, heads in self._lazy:
            if heads is not None and not name.startswith(heads):
                continue
            pattern = self._each.get(rx)
            if pattern is None:
                pattern = self._each[rx] = re.compile(rx)
            if pattern.fullmatch(name):
                return family
        return None

    def plan_routing_family(self, plan: LaunchPlan, name: str) -> str | None:
        """``routing_family``, knowing the names the plan's profile declares for a family itself
        (``TAOTOKEN_BASE_URL`` exported as an OpenAI base URL is of the openai family in that plan)."""
        return plan.routing_names.get(name) or self.routing_family(name)

    def cloud_switch(self, name: str) -> bool:
        """A variable that turns a client to a cloud platform (every request goes there)."""
        if self._switch_re is None:
            self._switch_re = re.compile("|".join(self.switches) or r"(?!)")
        return bool(self._switch_re.fullmatch(name))

    def is_loader(self, name: str) -> bool:
        return name in LOADER_NAMES or name in self.loaders or name.startswith(LOADER_PREFIXES)

    def client_loader(self, name: str) -> bool:
        """A variable a client's own launcher reads to run other code (``KILO_BIN_PATH``): its spec's ``loaders``."""
        return name in self.loaders

    def kind(self, name: str) -> str | None:
        """What a variable does to a launch, when it is one ccs names: cloud-switch, routing, proxy,
        cloud, loader, trust; None for ordinary variables. A client's own loader variable is a loader
        first, although its name is in the client's routing family."""
        if name in self.loaders:
            return "loader"
        if self.cloud_switch(name):
            return "cloud-switch"
        family = self.routing_family(name)
        if family in NON_CLIENT_FAMILIES:
            return family
        if family is not None:
            return "routing"
        if is_trust(name):
            return "trust"
        return "loader" if self.is_loader(name) else None

    def steers(self, name: str) -> bool:
        """A variable that changes where a request goes, with which key, through which proxy, which
        certificates are trusted or what code runs: one of any kind, or of any family."""
        return self.kind(name) is not None or self.routing_family(name) is not None

    def literal_heads(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Every family's alternatives as literal prefixes (``OPENAI_`` of ``OPENAI_.*``) and names."""
        prefixes: list[str] = []
        names: list[str] = []
        for _, rx in (*self.client, *SHARED_FAMILIES, *(("switch", s) for s in self.switches)):
            for alt in rx.split("|"):
                head, whole = _head(alt)
                if whole:
                    names.append(head)
                elif head:  # (an alternative without a literal head cannot be guarded by one)
                    prefixes.append(head)
        return tuple(dict.fromkeys(prefixes)), tuple(dict.fromkeys(names))

    def routing_prefilter(self) -> re.Pattern[bytes]:
        """A bytes pattern that finds a routing variable in a raw ``/proc/PID/environ``: a cheap first
        pass before parsing it, built from the same families (so no client is missed)."""
        if self._prefilter is None:
            prefixes, names = self.literal_heads()
            alts = [re.escape(p) for p in prefixes] + [re.escape(n) + "=" for n in names]
            self._prefilter = re.compile(("(?:^|\0)(?:" + "|".join(alts) + ")").encode())
        return self._prefilter


_QUANTIFIERS = "?*+{"


def _head(alt: str) -> tuple[str, bool]:
    """What every name one alternative of a family regex matches starts with (its literal head, an
    escaped character read as itself), and whether the alternative is that name alone. A character a
    quantifier follows may be absent (``ABC?_KEY`` matches ``AB_KEY``): it is not part of the head."""
    head: list[str] = []
    i = 0
    while i < len(alt):
        c = alt[i]
        if c == "\\" and i + 1 < len(alt) and not alt[i + 1].isalnum():
            head.append(alt[i + 1])
            i += 2
            continue
        if c in "[]().*+?{}^$\\":
            break
        head.append(c)
        i += 1
    else:
        return "".join(head), True
    if alt[i] in _QUANTIFIERS and head:
        head.pop()
    return "".join(head), False


def _heads(rx: str) -> tuple[str, ...] | None:
    """The literal heads of a family regex, one an alternative (split at each ``|``, which can only
    give more and shorter heads than the pattern has); None when an alternative has none (a group, a
    class, an inline flag first): then every name is tried."""
    heads = tuple(_head(alt)[0] for alt in rx.split("|"))
    return None if not all(heads) else heads


SHARED_ONLY = Families()  # no client's: what the policy knows before (or without) any client spec
