"""The import plan: matches candidates against the profiles already there and against each other,
decides what each one becomes, and writes nothing until ``Planner.apply``.

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
from collections.abc import Mapping
from typing import Any

from ccswitch_tui import tools
from ccswitch_tui.errors import CcsError, UsageError
from ccswitch_tui.importers.model import Candidate, RowProblem, Side, Slot, compared, fail, norm_url, skip
from ccswitch_tui.importers.naming import host_label, slugify, with_suffix
from ccswitch_tui.importers.report import Item
from ccswitch_tui.importers.writer import MIN_KEY_CHECK, check_alone, render_added, render_new
from ccswitch_tui.keys.keyring import KeyStore, has_control_chars
from ccswitch_tui.profiles.store import ProfileChanged, Store, validate_text
from ccswitch_tui.tools.checker import KEY_ID_RE


def same_text(a: str | None, b: str | None) -> bool:
    return bool(a and b and a.strip().casefold() == b.strip().casefold())


def _same_key(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))


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
        self._originals: dict[str, str] = {}
        for e in store.entries():
            if e.profile is not None:
                self.slots.append(Slot.of_profile(e.profile))

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
            raise skip(f"serves neither {tools.load().client_labels('nor', tools.load().importable())}")
        if c.key is not None and has_control_chars(c.key):
            raise fail("the key holds control characters (a NUL, tab, newline or escape), which no environment "
                       "variable can carry; fix the key in the source and import again")
        check_alone(c)
        if not (self._as_duplicate(c, sides, item) or self._as_differing(c, sides, item)
                or self._as_added_tables(c, sides, item)):
            self._as_new_profile(c, sides, item)

    def _as_duplicate(self, c: Candidate, sides: Mapping[str, Side], item: Item) -> bool:
        """The same provider with the same settings is already there (or earlier in this import)."""
        for s in self.slots:
            if self._relation(c, s) is None:
                continue
            if all(s.side(t) is not None and compared(t, s.side(t)) == compared(t, f) for t, f in sides.items()):
                self._settle_key(c, s, item)
                item.profile = s.name
                if all(t in s.claimed for t in sides):
                    first = s.claimed[next(iter(sides))]
                    item.action, item.reason = "skipped", f"duplicate of {first} (same endpoint, key and models)"
                else:
                    item.action = "unchanged"
                    for t in sides:
                        s.claimed.setdefault(t, c.source)
                return True
        return False

    def _as_differing(self, c: Candidate, sides: Mapping[str, Side], item: Item) -> bool:
        """A profile of the same name and endpoint that differs: left alone, never overwritten."""
        for s in self.slots:
            if not s.existing or set(sides) & set(s.claimed) or not same_text(c.provider_name, s.provider_name):
                continue
            if not all((mine := s.side(t)) is not None and norm_url(mine.base_url) == norm_url(f.base_url)
                       for t, f in sides.items()):
                continue
            item.profile = s.name
            item.key_id = s.key_ref
            if self._relation(c, s) is None:
                item.action = "skipped"
                item.reason = (f"profile {s.name!r} serves the same endpoint with a different key; left as is "
                               f"(to replace its key: `ccs key set {s.key_ref}`)")
                return True
            diffs = _differences(c, s)
            item.action = "skipped"
            item.reason = (f"profile {s.name!r} already holds this provider but differs in {', '.join(diffs)}; "
                           "left as is (edit it, or remove it and import again)")
            if c.key and s.key_ref and not s.key_ref.startswith("env:") and self.value_of(s.key_ref) is None:
                item.reason += f"; its key id {s.key_ref!r} holds no key yet: `ccs key set {s.key_ref}`"
            return True
        return False

    def _as_added_tables(self, c: Candidate, sides: Mapping[str, Side], item: Item) -> bool:
        """Another tool of a provider that has a profile: add the missing table."""
        for s in self.slots:
            rel = self._relation(c, s)
            if rel is None:
                continue
            missing = [t for t in sides if s.side(t) is None]
            common = [t for t in sides if s.side(t) is not None]
            if not missing or any(compared(t, s.side(t)) != compared(t, sides[t]) for t in common):
                continue
            host = sorted(c.hosts() & s.hosts())
            if not (common or host or same_text(c.provider_name, s.provider_name)):
                continue
            self._add_tables(c, s, sides, missing, item)
            why = ["same key" if rel == "same" else "same name"]
            if host:
                why.append(f"same host {host[0]}")
            elif rel == "same" and same_text(c.provider_name, s.provider_name):
                why.append("same name")
            into = f"existing profile {s.name!r}" if s.existing else f"the profile from {s.sources[0]}"
            item.action, item.profile = "merged", s.name
            item.reason = f"added [{', '.join(missing)}] to {into} ({', '.join(why)})"
            return True
        return False

    def _add_tables(self, c: Candidate, s: Slot, sides: Mapping[str, Side], missing: list[str], item: Item) -> None:
        for t in missing:
            s.tables[t] = sides[t]
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

    def _as_new_profile(self, c: Candidate, sides: Mapping[str, Side], item: Item) -> None:
        name = self._new_name(c)
        kid, state = self._key_for_new(c, name)
        first = next(iter(sides.values()))  # the first in registry order gives the provider's URL
        s = Slot(name=name, provider_name=c.provider_name, provider_base_url=first.base_url, key_ref=kid,
                 tables=dict(sides), website=c.website, description=c.description,
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
            text = self._built(s, secrets)
            if text is None:
                continue
            self._texts.append((s, text))
            for it in s.items:
                it.path = str(self.store.path_for(s.name))
        for it in self.items:
            if it.profile and it.path is None and it.action in ("unchanged", "skipped"):
                it.path = str(self.store.path_for(it.profile))

    def _built(self, s: Slot, secrets: list[str]) -> str | None:
        """The slot's profile text, validated and free of the new keys; None when it cannot be built
        (its items then say why, and a key it alone stored is not stored)."""
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
            return None
        return text

    def _render(self, s: Slot) -> str:
        if not s.existing:
            return render_new(s)
        original = self.store.read_text(s.name)
        self._originals[s.name] = original  # the write checks the file still holds it
        return render_added(validate_text(s.name, original, str(self.store.path_for(s.name)))[0], s)

    def apply(self) -> None:
        """Store the new keys, then write the profiles (each atomically). A profile that cannot be
        written (say, another one of that name appeared meanwhile) turns its lines into errors and
        takes back the key it alone stored."""
        if self.dry_run:
            raise CcsError("internal: apply() on a dry run")
        self.finish()
        assert self._texts is not None
        stored: dict[str, str | None] = {}  # key id → the value it held before this call
        try:
            for kid, value in self.new_keys.items():
                stored[kid] = self.keys.set(kid, value)
        except BaseException:
            self._undo_keys(stored)
            raise
        failed: list[Slot] = []
        pending = [s for s, _ in self._texts]
        try:
            for s, text in self._texts:
                try:
                    self.store.save_text(s.name, text, create=not s.existing, expected=self._originals.get(s.name))
                except CcsError as exc:
                    failed.append(s)
                    why = (f"{exc}; run the import again" if isinstance(exc, ProfileChanged)
                           else f"could not write profile {s.name!r}: {exc}")
                    for it in s.items:
                        it.action, it.reason, it.path = "error", why, None
                pending.remove(s)
        except BaseException:
            failed += pending
            raise
        finally:
            written = [s for s, _ in self._texts if s not in failed] + [s for s in self.slots if not s.dirty]
            self._undo_keys({s.new_key: stored[s.new_key] for s in failed
                             if s.new_key in stored and not any(x.key_ref == s.new_key for x in written)})

    def _undo_keys(self, stored: Mapping[str, str | None]) -> None:
        """Take back keys this call stored (a key someone changed since is left alone)."""
        for kid, previous in stored.items():
            try:
                self.keys.undo_set(kid, self.new_keys[kid], previous)
            except CcsError:
                continue



def _differences(c: Candidate, s: Slot) -> list[str]:
    out = []
    for t, f in c.sides().items():
        mine, theirs = compared(t, f), compared(t, s.side(t))
        for k in mine:
            if mine[k] != theirs[k]:
                out.append(f"{t}.{k} ({_short(theirs[k])} → {_short(mine[k])})")
    return out or ["nothing visible"]


def _short(v: Any) -> str:
    if isinstance(v, Mapping):
        return "{" + ", ".join(sorted(v)) + "}"
    return "-" if v is None else str(v)

