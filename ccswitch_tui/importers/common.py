"""What the importers share: candidates read from a source, the plan that matches them against the
profiles already there, the writes, and the report.

An importer turns each entry of its source into a ``Candidate`` (or a ``RowProblem``) and hands it
to a ``Planner``. The planner decides, without writing anything, what each candidate becomes:

- ``unchanged``: a profile with the same key and the same settings for every tool the candidate
  serves is already there (a re-import, or the same provider from another source);
- ``merged``: the candidate adds a tool to a profile with the same key and the same host or name
  (Claude Code and Codex entries of one provider become one profile);
- ``created``: a new profile, with a slugified name that does not collide;
- ``skipped`` / ``error``: with the reason.

Keys go to the keyring only (``KeyStore.set``); identical keys share one key id. ``apply`` stores the
keys first, then writes each profile atomically, so a failure never leaves half a profile.
"""

from __future__ import annotations

import hmac
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit

import tomlkit

from ..errors import CcsError, UsageError
from ..profile import KEY_ID_RE, Profile, default_provider_id
from ..secrets import KeyStore
from ..store import Store, validate_text

ACTIONS = ("created", "merged", "unchanged", "skipped", "error")
TOOL_SIDES = ("claude", "codex")
MIN_KEY_CHECK = 8  # shorter "keys" are placeholders; searching texts for them finds only noise


class RowProblem(Exception):
    """A source entry that is not imported; ``action`` is "skipped" (nothing to import) or "error"."""

    def __init__(self, action: str, reason: str):
        super().__init__(reason)
        self.action = action
        self.reason = reason


def skip(reason: str) -> RowProblem:
    return RowProblem("skipped", reason)


def fail(reason: str) -> RowProblem:
    return RowProblem("error", reason)


# --- small helpers ------------------------------------------------------------------------------

def norm_url(url: str) -> str:
    return url.strip().rstrip("/")


def host_of(url: str | None) -> str:
    if not url:
        return ""
    try:
        return (urlsplit(url.strip()).hostname or "").lower()
    except ValueError:
        return ""


def slugify(text: str, max_len: int = 64) -> str:
    """A profile-name-like slug: ASCII lower case, a-z 0-9 . _ -; empty when nothing is left."""
    t = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    t = re.sub(r"[^a-z0-9._-]+", "-", t)
    t = re.sub(r"-{2,}", "-", t).strip("-._")
    return t[:max_len].rstrip("-._")


def host_label(host: str) -> str:
    """The memorable part of a host name: ``api.deepseek.com`` → ``deepseek``."""
    host = host.lower().strip(".")
    labels = host.split(".")
    if len(labels) < 2 or all(p.isdigit() for p in labels):
        return host
    rest = labels[:-1]
    if len(rest) >= 2 and rest[-1] in ("com", "co", "net", "org", "gov", "edu", "ac"):
        rest = rest[:-1]
    return rest[-1]


def same_text(a: str | None, b: str | None) -> bool:
    return bool(a) and bool(b) and a.strip().casefold() == b.strip().casefold()  # type: ignore[union-attr]


def _same_key(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))


def with_suffix(base: str, n: int, max_len: int) -> str:
    suffix = f"-{n}"
    return base[: max_len - len(suffix)].rstrip("-._") + suffix


def today() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d")


# --- what a source entry becomes -----------------------------------------------------------------

@dataclass
class ClaudeFields:
    base_url: str
    auth: str = "token"
    model: str | None = None
    opus: str | None = None
    sonnet: str | None = None
    haiku: str | None = None
    subagent: str | None = None
    env: dict[str, str] = field(default_factory=dict)

    MODEL_FIELDS = ("model", "opus", "sonnet", "haiku", "subagent")

    def comparable(self) -> dict[str, Any]:
        return {
            "base_url": norm_url(self.base_url),
            "auth": self.auth,
            **{f: getattr(self, f) for f in self.MODEL_FIELDS},
            "env": dict(sorted(self.env.items())),
        }

    @classmethod
    def from_profile(cls, p: Profile) -> ClaudeFields | None:
        c = p.claude
        if c is None:
            return None
        return cls(c.base_url, c.auth, c.model, c.opus, c.sonnet, c.haiku, c.subagent, dict(c.env))

    def table(self, provider_base_url: str) -> Any:
        t = tomlkit.table()
        if norm_url(self.base_url) != norm_url(provider_base_url):
            t.add("base_url", self.base_url)
        t.add("auth", self.auth)
        for f in self.MODEL_FIELDS:
            if getattr(self, f):
                t.add(f, getattr(self, f))
        if self.env:
            env = tomlkit.table()
            for k, v in self.env.items():
                env.add(k, v)
            t.add("env", env)
        return t


@dataclass
class CodexFields:
    base_url: str
    model: str
    provider_id: str | None = None  # None: derived from the profile name
    reasoning_effort: str | None = None

    def comparable(self) -> dict[str, Any]:
        return {"base_url": norm_url(self.base_url), "model": self.model, "reasoning_effort": self.reasoning_effort}

    @classmethod
    def from_profile(cls, p: Profile) -> CodexFields | None:
        x = p.codex
        if x is None:
            return None
        return cls(x.base_url, x.model, x.provider_id, x.reasoning_effort)

    def table(self, provider_base_url: str, profile_name: str) -> Any:
        t = tomlkit.table()
        if norm_url(self.base_url) != norm_url(provider_base_url):
            t.add("base_url", self.base_url)
        t.add("model", self.model)
        t.add("provider_id", self.provider_id or default_provider_id(profile_name))
        if self.reasoning_effort:
            t.add("reasoning_effort", self.reasoning_effort)
        return t


@dataclass
class Candidate:
    """One provider entry read from a source. ``key`` lives in memory only, never in a repr."""

    source: str                      # short reference shown in the report, e.g. "db:claude/abc"
    origin: str                      # a longer description for the profile's header comment
    provider_name: str
    claude: ClaudeFields | None = None
    codex: CodexFields | None = None
    key: str | None = field(default=None, repr=False)
    website: str | None = None
    description: str = ""
    name: str | None = None          # a profile name asked for (--name)
    warnings: list[str] = field(default_factory=list)

    def sides(self) -> dict[str, ClaudeFields | CodexFields]:
        return {t: getattr(self, t) for t in TOOL_SIDES if getattr(self, t) is not None}

    def hosts(self) -> set[str]:
        return {host_of(f.base_url) for f in self.sides().values()} - {""}


@dataclass
class Item:
    """One line of the report: what became of one source entry."""

    source: str
    action: str
    name: str | None = None          # the provider's name in the source
    profile: str | None = None
    reason: str | None = None
    key_id: str | None = None
    key: str | None = None           # stored | shared | present | missing | env
    fingerprint: str | None = None
    path: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "name": self.name,
            "action": self.action,
            "profile": self.profile,
            "path": self.path,
            "reason": self.reason,
            "key_id": self.key_id,
            "key": self.key,
            "fingerprint": self.fingerprint,
            "warnings": list(self.warnings),
        }


@dataclass
class Report:
    kind: str                        # cc-switch | claude | codex
    read: list[str]                  # the files actually read
    dry_run: bool
    items: list[Item] = field(default_factory=list)
    scrubbed: list[dict[str, Any]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(ACTIONS, 0)
        for it in self.items:
            out[it.action] = out.get(it.action, 0) + 1
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "import": self.kind,
            "dry_run": self.dry_run,
            "read": list(self.read),
            "items": [it.to_json() for it in self.items],
            "summary": self.counts(),
            "scrubbed": list(self.scrubbed),
        }

    def render(self) -> str:
        lines: list[str] = []
        width = max([len(it.profile or "-") for it in self.items] + [7])
        for it in self.items:
            head = f"{it.action:<9} {(it.profile or '-'):<{width}}  {it.source}"
            if it.name:
                head += f" {it.name!r}"
            lines.append(head)
            if it.reason:
                lines.append(f"          {it.reason}")
            if it.key_id and it.action in ("created", "merged", "unchanged"):
                fp = f", {it.fingerprint}" if it.fingerprint else ""
                hint = f" — store it with `ccs key set {it.key_id}`" if it.key == "missing" else ""
                lines.append(f"          key {it.key_id} ({it.key}{fp}){hint}")
            for w in it.warnings:
                lines.append(f"          warning: {w}")
        for s in self.scrubbed:
            verb = "would remove" if self.dry_run else "removed"
            if s.get("removed"):
                lines.append(f"scrub     {s['path']}: {verb} {', '.join(s['removed'])}")
            if s.get("note"):
                lines.append(f"scrub     {s['path']}: {s['note']}")
        c = self.counts()
        summary = ", ".join(f"{c[a]} {a}" for a in ACTIONS)
        prefix = "dry run, nothing written: " if self.dry_run else ""
        lines.append(f"{prefix}{summary}" + (f" (read {', '.join(self.read)})" if self.read else ""))
        return "\n".join(lines)


# --- the plan -----------------------------------------------------------------------------------

@dataclass
class Slot:
    """A profile in the plan: one already on disk, or one this import creates."""

    name: str
    provider_name: str
    provider_base_url: str
    key_ref: str | None
    claude: ClaudeFields | None = None
    codex: CodexFields | None = None
    existing: bool = False
    website: str | None = None
    description: str = ""
    origins: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    added: list[tuple[str, str]] = field(default_factory=list)   # (side, origin) added to an existing profile
    items: list[Item] = field(default_factory=list)
    new_key: str | None = None       # a key id this slot stores
    dirty: bool = False
    claimed: dict[str, str] = field(default_factory=dict)        # side → the source that matched it

    def side(self, tool: str) -> ClaudeFields | CodexFields | None:
        return getattr(self, tool)

    def hosts(self) -> set[str]:
        urls = [self.provider_base_url] + [f.base_url for f in (self.claude, self.codex) if f is not None]
        return {host_of(u) for u in urls} - {""}


class Planner:
    """Matches candidates against the profiles on disk and against each other; writes nothing
    until ``apply``."""

    def __init__(self, store: Store, keys: KeyStore, *, dry_run: bool = False):
        self.store = store
        self.keys = keys
        self.dry_run = dry_run
        self.items: list[Item] = []
        self.slots: list[Slot] = []
        self.taken: set[str] = set(store.names())
        self.new_keys: dict[str, str] = {}
        self._values: dict[str, str | None] = {}
        self._texts: list[tuple[Slot, str]] | None = None
        for e in store.entries():
            if e.profile is None:
                continue
            p = e.profile
            self.slots.append(Slot(
                name=p.name, provider_name=p.provider.name, provider_base_url=p.provider.base_url,
                key_ref=p.key_id, claude=ClaudeFields.from_profile(p), codex=CodexFields.from_profile(p),
                existing=True, website=p.provider.website, description=p.description,
            ))

    # keys ----------------------------------------------------------------------------------------
    def value_of(self, ref: str | None) -> str | None:
        """The key a ref holds now or after this plan (keyring read once per ref)."""
        if not ref:
            return None
        if ref in self.new_keys:
            return self.new_keys[ref]
        if ref not in self._values:
            try:
                self._values[ref] = self.keys.lookup(ref)
            except UsageError:  # an id that is not a valid key id (a hand-edited index)
                self._values[ref] = None
        return self._values[ref]

    def fingerprint(self, value: str | None) -> str | None:
        if not value:
            return None
        if self.dry_run and not self.keys.paths.salt.exists():
            return None  # making the salt would write a file
        return self.keys.fingerprint(value)

    def _known_ids(self) -> list[str]:
        ids = set(self.keys.ids()) | set(self.new_keys)
        ids |= {s.key_ref for s in self.slots if s.key_ref and not s.key_ref.startswith("env:")}
        return sorted(ids)

    def _key_in_use(self, kid: str) -> bool:
        return kid in self.new_keys or any(s.key_ref == kid for s in self.slots)

    def _key_for_new(self, c: Candidate, profile_name: str) -> tuple[str, str]:
        """(key id, state) for a new profile: an id already holding the same key, or a fresh one."""
        if c.key:
            for kid in self._known_ids():
                v = self.value_of(kid)
                if v and _same_key(v, c.key):
                    return kid, "shared"
        base = slugify(c.provider_name, 128) or profile_name
        if not KEY_ID_RE.fullmatch(base):
            base = profile_name
        kid, n = base, 2
        while self._key_in_use(kid) or self.value_of(kid) is not None:
            kid, n = with_suffix(base, n, 128), n + 1
        if c.key:
            self.new_keys[kid] = c.key
            return kid, "stored"
        return kid, "missing"

    def _settle_key(self, c: Candidate, s: Slot, item: Item) -> None:
        """The key state for a candidate that lands in an existing or planned slot."""
        item.key_id = s.key_ref
        if s.key_ref is None:
            return
        if s.key_ref.startswith("env:"):
            item.key = "env"
            return
        v = self.value_of(s.key_ref)
        if v is None and c.key:
            self.new_keys[s.key_ref] = c.key
            s.new_key = s.new_key or s.key_ref
            item.key, v = "stored", c.key
        else:
            item.key = "present" if v else "missing"
        item.fingerprint = self.fingerprint(v)

    def _relation(self, c: Candidate, s: Slot) -> str | None:
        """"same" (same key), "unknown" (a key is missing on one side, and the names agree), or None."""
        v = self.value_of(s.key_ref)
        if c.key is None or v is None:
            return "unknown" if same_text(c.provider_name, s.provider_name) else None
        return "same" if _same_key(v, c.key) else None

    # names ---------------------------------------------------------------------------------------
    def _new_name(self, c: Candidate) -> str:
        if c.name:
            if c.name in self.taken:
                raise fail(f"a profile named {c.name!r} already exists with other settings; pick another --name")
            return c.name
        hosts = sorted(c.hosts())
        base = slugify(c.provider_name) or (slugify(host_label(hosts[0])) if hosts else "") or "imported"
        name, n = base, 2
        while name in self.taken:
            name, n = with_suffix(base, n, 64), n + 1
        return name

    # planning ------------------------------------------------------------------------------------
    def problem(self, source: str, action: str, reason: str, name: str | None = None) -> Item:
        item = Item(source=source, action=action, name=name, reason=reason)
        self.items.append(item)
        return item

    def add(self, c: Candidate) -> Item:
        item = Item(source=c.source, action="error", name=c.provider_name, warnings=list(c.warnings))
        self.items.append(item)
        try:
            self._place(c, item)
        except RowProblem as p:
            item.action, item.reason = p.action, p.reason
        return item

    def _place(self, c: Candidate, item: Item) -> None:
        sides = c.sides()
        if not sides:
            raise skip("serves neither Claude Code nor Codex")
        _check_alone(c)

        # 1. the same provider with the same settings is already there (or earlier in this import)
        for s in self.slots:
            if self._relation(c, s) is None:
                continue
            if all(s.side(t) is not None and s.side(t).comparable() == f.comparable() for t, f in sides.items()):
                self._settle_key(c, s, item)
                item.profile = s.name
                if all(t in s.claimed for t in sides):
                    first = s.claimed[next(iter(sides))]
                    item.action, item.reason = "skipped", f"duplicate of {first} (same endpoint, key and models)"
                else:
                    item.action = "unchanged"
                    for t in sides:
                        s.claimed.setdefault(t, c.source)
                return

        # 2. a profile of the same name and endpoint that differs: left alone, never overwritten
        for s in self.slots:
            if not s.existing or set(sides) & set(s.claimed) or not same_text(c.provider_name, s.provider_name):
                continue
            if not all(s.side(t) is not None and norm_url(s.side(t).base_url) == norm_url(f.base_url)
                       for t, f in sides.items()):
                continue
            item.profile = s.name
            item.key_id = s.key_ref
            if self._relation(c, s) is None:
                item.action = "skipped"
                item.reason = (f"profile {s.name!r} serves the same endpoint with a different key; left as is "
                               f"(to replace its key: `ccs key set {s.key_ref}`)")
                return
            diffs = _differences(c, s)
            item.action = "skipped"
            item.reason = (f"profile {s.name!r} already holds this provider but differs in {', '.join(diffs)}; "
                           "left as is (edit it, or remove it and import again)")
            if c.key and s.key_ref and not s.key_ref.startswith("env:") and self.value_of(s.key_ref) is None:
                item.reason += f"; its key id {s.key_ref!r} holds no key yet: `ccs key set {s.key_ref}`"
            return

        # 3. another tool of a provider that has a profile: add the missing table
        for s in self.slots:
            rel = self._relation(c, s)
            if rel is None:
                continue
            missing = [t for t in sides if s.side(t) is None]
            common = [t for t in sides if s.side(t) is not None]
            if not missing or any(s.side(t).comparable() != sides[t].comparable() for t in common):
                continue
            host = sorted(c.hosts() & s.hosts())
            if not (common or host or same_text(c.provider_name, s.provider_name)):
                continue
            for t in missing:
                setattr(s, t, sides[t])
                if s.existing:
                    s.added.append((t, c.origin))
            for t in sides:
                s.claimed.setdefault(t, c.source)
            if not s.existing:
                s.origins.append(c.origin)
            s.dirty = True
            s.sources.append(c.source)
            s.items.append(item)
            s.website = s.website or c.website
            self._settle_key(c, s, item)
            why = ["same key" if rel == "same" else "same name"]
            if host:
                why.append(f"same host {host[0]}")
            elif rel == "same" and same_text(c.provider_name, s.provider_name):
                why.append("same name")
            into = f"existing profile {s.name!r}" if s.existing else f"the profile from {s.sources[0]}"
            item.action, item.profile = "merged", s.name
            item.reason = f"added [{', '.join(missing)}] to {into} ({', '.join(why)})"
            return

        # 4. a new profile
        name = self._new_name(c)
        kid, state = self._key_for_new(c, name)
        first = sides.get("claude") or sides["codex"]
        s = Slot(name=name, provider_name=c.provider_name, provider_base_url=first.base_url, key_ref=kid,
                 claude=c.claude, codex=c.codex, website=c.website, description=c.description,
                 origins=[c.origin], sources=[c.source], items=[item], dirty=True,
                 new_key=kid if state == "stored" else None, claimed=dict.fromkeys(sides, c.source))
        self.slots.append(s)
        self.taken.add(name)
        item.action, item.profile, item.key_id, item.key = "created", name, kid, state
        item.fingerprint = self.fingerprint(c.key)
        if state == "shared":
            users = sorted(x.name for x in self.slots if x.key_ref == kid and x is not s)
            item.reason = f"same key as {', '.join(users)}: key id shared" if users else "key already in the keyring"

    # rendering and writing -----------------------------------------------------------------------
    def finish(self) -> None:
        """Render and validate every profile to write; a slot that fails turns its items into errors."""
        if self._texts is not None:
            return
        self._texts = []
        secrets = [v for v in self.new_keys.values() if v and len(v) >= MIN_KEY_CHECK]
        for s in self.slots:
            if not s.dirty:
                continue
            try:
                text = self._render(s)
                validate_text(s.name, text, f"{s.name}.toml")
                if any(v in text for v in secrets):
                    raise CcsError("the key would appear in the profile text; refusing to write it")
            except CcsError as exc:
                for it in s.items:
                    it.action, it.reason = "error", f"could not build profile {s.name!r}: {exc}"
                if s.new_key and not any(x.key_ref == s.new_key for x in self.slots if x is not s):
                    self.new_keys.pop(s.new_key, None)
                continue
            self._texts.append((s, text))
            for it in s.items:
                it.path = str(self.store.path_for(s.name))
        for it in self.items:
            if it.profile and it.path is None and it.action in ("unchanged", "skipped"):
                it.path = str(self.store.path_for(it.profile))

    def _render(self, s: Slot) -> str:
        if s.existing:
            doc = self.store.load_doc(s.name)
            for tool, origin in s.added:
                f = s.side(tool)
                t = f.table(s.provider_base_url, s.name) if tool == "codex" else f.table(s.provider_base_url)
                t.comment(f"added by ccs import from {origin} on {today()}")
                doc.add(tool, t)
            return tomlkit.dumps(doc)
        return render_new(s)

    def apply(self) -> None:
        """Store the new keys, then write the profiles (each atomically). A profile that cannot be
        written (say, another one of that name appeared meanwhile) turns its lines into errors and
        takes back the key it alone stored."""
        if self.dry_run:
            raise CcsError("internal: apply() on a dry run")
        self.finish()
        assert self._texts is not None
        for kid, value in self.new_keys.items():
            self.keys.set(kid, value)
        failed: list[Slot] = []
        for s, text in self._texts:
            try:
                self.store.save_text(s.name, text, create=not s.existing)
            except CcsError as exc:
                failed.append(s)
                for it in s.items:
                    it.action, it.reason, it.path = "error", f"could not write profile {s.name!r}: {exc}", None
        written = [s for s, _ in self._texts if s not in failed] + [s for s in self.slots if not s.dirty]
        for s in failed:
            if s.new_key and not any(x.key_ref == s.new_key for x in written):
                self.keys.delete(s.new_key)


def render_new(s: Slot) -> str:
    doc = tomlkit.document()
    doc.add(tomlkit.comment(f"Imported by ccs on {today()} from:"))
    for origin in s.origins:
        doc.add(tomlkit.comment(f"  {origin}"))
    if s.key_ref and not s.key_ref.startswith("env:"):
        doc.add(tomlkit.comment(f"The key is not in this file: it is in the OS keyring under id {s.key_ref!r}"))
        doc.add(tomlkit.comment(f"(see `ccs key show {s.key_ref}`)."))
    doc.add(tomlkit.nl())
    doc.add("schema", 1)
    doc.add("description", s.description)
    prov = tomlkit.table()
    prov.add("name", s.provider_name)
    prov.add("base_url", s.provider_base_url)
    prov.add("key", s.key_ref or slugify(s.provider_name) or s.name)
    if s.website:
        prov.add("website", s.website)
    doc.add("provider", prov)
    if s.claude:
        doc.add("claude", s.claude.table(s.provider_base_url))
    if s.codex:
        doc.add("codex", s.codex.table(s.provider_base_url, s.name))
    run = tomlkit.table()
    run.add("export", ["openai"] if s.codex else ["anthropic"])
    model = (s.codex.model if s.codex else None) or (s.claude.model if s.claude else None)
    if model:
        run.add("model", model)
    doc.add("run", run)
    return tomlkit.dumps(doc)


def _check_alone(c: Candidate) -> None:
    """Validate the profile this candidate alone would make, so a bad URL is reported on its row."""
    first = c.claude or c.codex
    assert first is not None
    probe = Slot(name="import-check", provider_name=c.provider_name or "x", provider_base_url=first.base_url,
                 key_ref="import-check", claude=c.claude, codex=c.codex, website=c.website,
                 description=c.description)
    try:
        text = render_new(probe)
        validate_text("import-check", text, "import-check.toml")
    except CcsError as exc:
        raise fail(str(exc).removeprefix("import-check.toml: ")) from None
    if c.key and len(c.key) >= MIN_KEY_CHECK and c.key in text:
        raise fail("the key also appears in a non-secret field; refusing to write it into a profile")


def _differences(c: Candidate, s: Slot) -> list[str]:
    out = []
    for t, f in c.sides().items():
        mine, theirs = f.comparable(), s.side(t).comparable()
        for k in mine:
            if mine[k] != theirs[k]:
                out.append(f"{t}.{k} ({_short(theirs[k])} → {_short(mine[k])})")
    return out or ["nothing visible"]


def _short(v: Any) -> str:
    if isinstance(v, Mapping):
        return "{" + ", ".join(sorted(v)) + "}"
    return "-" if v is None else str(v)


def first_line(text: Any) -> str:
    if not isinstance(text, str):
        return ""
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""
