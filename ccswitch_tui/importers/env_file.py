"""`ccs import env FILE`: a ``.env`` file (dotenv or shell syntax) becomes a profile, its key goes to
the keyring, and with ``--scrub`` the key's lines leave the file.

What is recognised: a key (``*_API_KEY``, ``*_AUTH_TOKEN``, ``*_TOKEN``, ``*_KEY`` — one value, which
several names may share through ``$REF``) and base URLs (``*_BASE_URL``). ``OPENAI_*`` become the
``"openai"`` export, ``ANTHROPIC_*`` the ``"anthropic"`` one, a client's own variables the fields of
its table (each spec's ``env_fields``), and a pair of names of no known family
(``TAOTOKEN_API_KEY`` + ``TAOTOKEN_BASE_URL``) an export table under those names. A host a preset
knows picks that preset. Every line that is not used is reported with the reason.

Nothing is written before the whole file is read and the profile text validated; keys go to the
keyring first, then the profile (atomically), then the scrub (atomically, every other byte kept).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomlkit

from ccswitch_tui import policy, tools
from ccswitch_tui.errors import CcsError, UsageError
from ccswitch_tui.importers.dotenv import Entry, EnvFile, parse
from ccswitch_tui.importers.model import Candidate, norm_url
from ccswitch_tui.importers.naming import host_label, host_of, slugify, with_suffix
from ccswitch_tui.importers.planner import Planner
from ccswitch_tui.importers.report import Item, Report
from ccswitch_tui.importers.scrub_file import rewrite
from ccswitch_tui.importers.writer import today
from ccswitch_tui.keys.keyring import has_control_chars
from ccswitch_tui.policy.families import Families
from ccswitch_tui.policy.shapes import looks_like_key
from ccswitch_tui.profiles.presets import list_presets, new_profile_text
from ccswitch_tui.profiles.store import validate_text
from ccswitch_tui.safe_read import NotRegularFile, decode_error_line, read_bytes
from ccswitch_tui.tools.capabilities import ReadingEnvFiles
from ccswitch_tui.tools.registry import Registry
from ccswitch_tui.valueclass import field, valueclass

MAX_ENV_BYTES = 256 * 1024  # an env file a person writes is a few lines
_KEY_NAME = re.compile(r"(?P<stem>[A-Za-z_][A-Za-z0-9_]*?)_(API_KEY|AUTH_TOKEN|TOKEN|KEY)")
_URL_NAME = re.compile(r"(?P<stem>[A-Za-z_][A-Za-z0-9_]*?)_BASE_URL")
_FAMILY_EXPORTS = (("OPENAI_", "openai"), ("ANTHROPIC_", "anthropic"))  # [run].export's own names


def read_env_file(path: Path) -> tuple[str, EnvFile]:
    """The file's text and its lines; a file that is not text a person wrote: UsageError, one line."""
    try:
        data = read_bytes(path, MAX_ENV_BYTES)
    except FileNotFoundError:
        raise UsageError(f"{path}: not found") from None
    except NotRegularFile as exc:
        raise UsageError(f"{path}: {exc}; give the path of a .env file") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if b"\0" in data:
        raise UsageError(f"{path}: a binary file (it holds NUL bytes), not a .env file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: {decode_error_line(exc)}; save the .env file as UTF-8") from None
    return text, parse(text)


class EnvReport(Report):
    """The import report, its scrub lines naming the file last: a file named like ``.env.taotoken``
    followed by ``:`` would read as a credential header and be masked in the output."""

    def render(self) -> str:
        saved, self.scrubbed = self.scrubbed, []
        try:
            lines = super().render().splitlines()
        finally:
            self.scrubbed = saved
        summary = lines.pop()
        verb = "would remove" if self.dry_run else "removed"
        for s in saved:
            if s.get("removed"):
                lines.append(f"scrub     {verb} {', '.join(s['removed'])} in {s['path']}")
            if s.get("note"):
                lines.append(f"scrub     {s['note']} (in {s['path']})")
        return "\n".join([*lines, summary])


@valueclass
class EnvPlan:
    report: Report
    path: Path
    text: str
    env: EnvFile
    key: str | None = field(default=None, repr=False)
    key_names: list[str] = field(default_factory=list)  # the lines' names that hold the key
    profile: str | None = None
    profile_text: str | None = None
    create: bool = True
    original: str | None = None
    key_id: str | None = None
    key_state: str | None = None
    item: Item | None = None


# what a walk-through's template holds where the key goes: sk-xxxxxxxx…, sk-your-key-here, <KEY>, sk-...
_PLACEHOLDER_WORDS = ("your", "xxxx", "placeholder", "changeme", "change-me", "change_me", "replace", "redacted",
                      "<", ">", "...", "…", "****")


def _placeholder(value: str) -> bool:
    """A template's stand-in for a key: a placeholder word, or a body (after its issuer's ``sk-``,
    ``sk-proj-`` …) of three different characters at most."""
    if any(w in value.lower() for w in _PLACEHOLDER_WORDS):
        return True
    body = re.sub(r"^(?:[A-Za-z]+[-_])+", "", value)
    return len({c.lower() for c in body if c.isalnum()}) <= 3


def _key_problem(entry: Entry) -> str | None:
    if has_control_chars(entry.value):
        return (f"line {entry.line}: {entry.name}'s value holds a control character (an escape, a tab, a NUL), "
                "which no environment variable can hand to a client; fix the line and import again")
    if looks_like_key(entry.value) and not _placeholder(entry.value):
        return None
    return (f"line {entry.line}: {entry.name}'s value does not look like an API key (a placeholder such as "
            "YOUR_API_KEY or sk-xxxx…?); put the real key in the file, or import without it and use "
            "`ccs key set`")


def _preset_for(host: str) -> str | None:
    for p in list_presets():
        prof = p.profile
        urls = [prof.provider.base_url] + [tools.load().get(t).base_url(s) or "" for t, s in prof.sides.items()]
        if host and host in {host_of(u) for u in urls}:
            return p.name
    return None


def plan_env(planner: Planner, path: Path, name: str | None = None) -> EnvPlan:
    """Read the file and decide the profile (nothing written)."""
    registry = planner.store.registry
    families = registry.families
    text, env = read_env_file(path)
    report = EnvReport(kind="env", read=[str(path)], dry_run=planner.dry_run, items=planner.items)
    plan = EnvPlan(report, path, text, env)
    unused: list[tuple[int, str, str]] = [(u.line, u.name, u.reason) for u in env.unread]
    last = _last_assignments(env, unused)
    entries = list(last.values())

    _take_key(plan, entries, last, families, unused)
    key_names = set(plan.key_names)
    urls = _base_urls(entries, unused)
    named = key_names | set(urls)
    exports = [family for prefix, family in _FAMILY_EXPORTS if any(n.startswith(prefix) for n in named)]
    used = {n for n in named if n.startswith(("OPENAI_", "ANTHROPIC_"))}
    openai_url = urls["OPENAI_BASE_URL"].value if "OPENAI_BASE_URL" in urls else None
    client_fields = _client_fields(registry, entries, named, used)
    anthropic_url = next((f["base_url"] for f in client_fields.values() if f.get("base_url")), None)
    custom = _custom_pairs(named, key_names, last, used, families, unused)
    tables, openai_url = _custom_tables(custom, urls, openai_url, anthropic_url, used, unused)
    _explain_unused(entries, named, used, families, unused)

    provider_url = openai_url or anthropic_url or next((e.value for n, e in urls.items() if n in used), None)
    source = str(path)
    for line, shown, reason in sorted(unused):
        planner.problem(f"{source}:{line}", "skipped", reason, name=shown)
    if not provider_url or plan.key is None:
        missing = "base URL (NAME_BASE_URL=…)" if not provider_url else "key (NAME_API_KEY=…)"
        plan.item = planner.problem(source, "skipped", f"the file sets no {missing}; nothing to import")
        return plan

    host = host_of(provider_url)
    item = Item(source=source, action="error", name=host_label(host) if host else None)
    planner.items.insert(0, item)
    plan.item = item
    try:
        _decide(planner, plan, name, host, provider_url, exports, tables, client_fields)
    except CcsError as exc:
        item.action, item.reason = "error", str(exc)
    return plan


def _last_assignments(env: EnvFile, unused: list[tuple[int, str, str]]) -> dict[str, Entry]:
    """Each name's last line (as in sh); the earlier ones go to ``unused``."""
    last = {e.name: e for e in env.entries}
    for e in env.entries:
        if last[e.name] is not e:
            unused.append((e.line, e.name, f"set again on line {last[e.name].line}, which wins (as in sh)"))
    return last


def _take_key(plan: EnvPlan, entries: list[Entry], last: Mapping[str, Entry], families: Families,
              unused: list[tuple[int, str, str]]) -> None:
    """The key: one value (``plan.key``), which several names may hold (``plan.key_names``); another
    key goes to ``unused``; a value that is no key: UsageError."""
    keys = [e for e in entries if _KEY_NAME.fullmatch(e.name) and policy.secret_name(e.name) and e.value]
    if not keys:
        return

    def rank(e: Entry) -> tuple[bool, bool, int]:
        """The provider's key first: one with a base URL of its stem or of a client's family (not a
        GITHUB_TOKEN beside it), written out rather than referenced, then the earliest."""
        matched = _KEY_NAME.fullmatch(e.name)
        stem = matched.group("stem") if matched else e.name  # every key entry matched _KEY_NAME above
        paired = f"{stem}_BASE_URL" in last or families.routing_family(e.name) in families.client_families()
        return not paired, not e.literal, e.line

    origin = min(keys, key=rank)
    problem = _key_problem(origin)
    if problem:
        raise UsageError(f"{plan.path}:{problem}")
    plan.key = origin.value
    for e in keys:
        if e.value == plan.key:
            plan.key_names.append(e.name)
        else:
            unused.append((e.line, e.name, f"another key than line {origin.line}'s {origin.name}; "
                                           "ccs imports one provider per file"))


def _base_urls(entries: list[Entry], unused: list[tuple[int, str, str]]) -> dict[str, Entry]:
    """The ``*_BASE_URL`` lines that hold an http(s) URL; the others go to ``unused``."""
    urls: dict[str, Entry] = {}
    for e in entries:
        if _URL_NAME.fullmatch(e.name):
            if re.match(r"https?://[^\s/]", e.value):
                urls[e.name] = e
            else:
                unused.append((e.line, e.name, f"{e.name} is not an http(s) URL"))
    return urls


def _client_fields(registry: Registry, entries: list[Entry], named: set[str],
                   used: set[str]) -> dict[str, dict[str, Any]]:
    """The clients' own variables: each spec says which fields they set (client → its fields); the
    key and base-URL names they take join ``used``."""
    families = registry.families
    client_fields: dict[str, dict[str, Any]] = {}
    values = {e.name: e.value for e in entries}
    for spec in registry.specs():
        mine = {k: v for k, v in values.items()
                if any(re.fullmatch(rx, k) for rx in spec.families.values())}
        fields = spec.env_fields(mine) if mine and isinstance(spec, ReadingEnvFiles) else None
        if fields:
            client_fields[spec.name] = fields
            used |= {k for k in mine if k in named or families.routing_family(k)}
    return client_fields


def _custom_pairs(named: set[str], key_names: set[str], last: Mapping[str, Entry], used: set[str],
                  families: Families, unused: list[tuple[int, str, str]]) -> dict[str, dict[str, str]]:
    """Names of no known family, paired by their stem (TAOTOKEN_API_KEY + TAOTOKEN_BASE_URL):
    stem → role (``key``, ``base_url``) → name."""
    custom: dict[str, dict[str, str]] = {}
    for n in sorted(named, key=lambda n: last[n].line):
        if n in used or families.routing_family(n) is not None:
            continue
        m = _KEY_NAME.fullmatch(n) if n in key_names else _URL_NAME.fullmatch(n)
        assert m
        role = "key" if n in key_names else "base_url"
        problem = policy.custom_name_problem(n, role, families)
        if problem:
            unused.append((last[n].line, n, problem))
            continue
        custom.setdefault(m.group("stem"), {})[role] = n
    return custom


def _custom_tables(custom: Mapping[str, dict[str, str]], urls: Mapping[str, Entry], openai_url: str | None,
                   anthropic_url: str | None, used: set[str],
                   unused: list[tuple[int, str, str]]) -> tuple[list[dict[str, str]], str | None]:
    """The export tables of the custom pairs, and the OpenAI-style URL (a pair's URL when the file
    names none); a pair's URL that is neither endpoint goes to ``unused``."""
    tables: list[dict[str, str]] = []
    for names in custom.values():
        url = urls[names["base_url"]].value if "base_url" in names else None
        if url and openai_url is None and norm_url(url) != norm_url(anthropic_url or ""):
            openai_url = url  # the program's own names for an OpenAI-style endpoint
        if url is None or norm_url(url) == norm_url(openai_url or ""):
            table = dict(names)
        elif anthropic_url and norm_url(url) == norm_url(anthropic_url):
            table = {**names, "family": "anthropic"}
        else:
            unused.append((urls[names["base_url"]].line, names["base_url"],
                           f"its URL is neither the OpenAI one ({openai_url}) nor the Anthropic one; "
                           "import it from a file of its own"))
            names.pop("base_url")
            if not names:
                continue
            table = dict(names)
        tables.append(table)
        used |= set(table.values())
    return tables, openai_url


def _explain_unused(entries: list[Entry], named: set[str], used: set[str], families: Families,
                    unused: list[tuple[int, str, str]]) -> None:
    """Every line nothing took, with the reason (once per name)."""
    for e in entries:
        if e.name in used:
            continue
        if e.name in named:
            fam = families.routing_family(e.name)
            why = (f"a variable of the {fam} family that no client table or export takes from an env file"
                   if fam else "no variable of its family sets a base URL or key")
            unused.append((e.line, e.name, why))
        elif not any(n == e.name for _, n, _ in unused):
            unused.append((e.line, e.name, _why_unused(e, families)))


def _why_unused(e: Entry, families: Families) -> str:
    fam = families.routing_family(e.name)
    if not e.value:
        return "empty" + (f" (it references {', '.join('$' + r for r in e.refs)}, which holds nothing)"
                          if e.refs else "")
    if fam:
        return f"a variable of the {fam} family that ccs does not take from an env file"
    return "not a key or a base URL; put it in the profile's [env] if a program needs it"


def _decide(planner: Planner, plan: EnvPlan, name: str | None, host: str, provider_url: str,  # noqa: C901
            exports: list[str], tables: list[dict[str, str]], client_fields: Mapping[str, Mapping[str, Any]]) -> None:
    item = plan.item
    assert item is not None and plan.key is not None
    store = planner.store
    # an existing profile of this key and host: merge into it
    target = None
    if name is None:
        for e in store.entries():
            p = e.profile
            if p is None or not p.key_id or p.key_id.startswith("env:") or planner.value_of(p.key_id) != plan.key:
                continue
            hosts = {host_of(p.provider.base_url)} | {host_of(tools.load().get(t).base_url(s) or "")
                                                      for t, s in p.sides.items()}
            if host in hosts:
                target = p.name
                break
    elif name in store.names():
        target = name
    if target is not None:
        original = store.read_text(target)
        doc, prof = validate_text(target, original, str(store.path_for(target)))
        added = _fill(doc, prof.provider.base_url, exports, tables, client_fields, only_missing=True)
        plan.profile, plan.create, plan.original = target, False, original
        plan.key_id, item.profile, item.key_id = prof.key_id, target, prof.key_id
        item.path = str(store.path_for(target))
        if planner.value_of(prof.key_id) != plan.key:
            raise CcsError(f"profile {target!r} holds another key under {prof.key_id!r}; pick another --name")
        item.key, plan.key_state = "present", "present"
        item.fingerprint = planner.fingerprint(plan.key)
        if not added:
            item.action, item.reason = "unchanged", "the profile already exports everything the file sets"
            return
        doc.add(tomlkit.comment(f"[run].export and tables added by ccs import env from {plan.path} on {today()}"))
        plan.profile_text = tomlkit.dumps(doc)
        validate_text(target, plan.profile_text, str(store.path_for(target)))
        item.action = "merged"
        item.reason = f"added {', '.join(added)} to existing profile {target!r} (same key and host)"
        return

    preset = _preset_for(host)
    base = name or preset or slugify(host_label(host)) or "imported"
    new, n = base, 2
    while new in store.names() and name is None:
        new, n = with_suffix(base, n, 64), n + 1
    # the key's id: the preset's (its own name), else the name given with --name, else the host's label
    cand = Candidate(source=str(plan.path), origin=f"env file {plan.path}",
                     provider_name=preset or name or host_label(host) or new, key=plan.key)
    kid, state = planner._key_for_new(cand, new)
    text = new_profile_text(new, preset, base_url=provider_url, key=kid,
                            provider_name=None if preset else host_label(host))
    doc = tomlkit.parse(text)
    if preset is None:
        for t in tools.names():  # a blank profile serves what the file sets, nothing more
            # (a URL-only table is the creation's own fix of the provider's URL for that client)
            if t in doc and t not in client_fields and t != "run" and set(doc[t]) <= {"base_url"}:
                del doc[t]
        doc["run"]["export"] = tomlkit.array()
    doc["description"] = f"imported from {plan.path}"
    _fill(doc, provider_url, exports, tables, client_fields, only_missing=False)
    head = tomlkit.document()
    head.add(tomlkit.comment(f"Imported by ccs on {today()} from env file {plan.path}"))
    head.add(tomlkit.comment(f"The key is not in this file: it is in the OS keyring under id {kid!r}."))
    plan.profile_text = tomlkit.dumps(head) + tomlkit.dumps(doc)
    validate_text(new, plan.profile_text, f"{new}.toml")
    if plan.key in plan.profile_text:
        raise CcsError("the key would appear in the profile text; refusing to write it")
    plan.profile, plan.create, plan.key_id, plan.key_state = new, True, kid, state
    item.action, item.profile, item.key_id, item.key = "created", new, kid, state
    item.path = str(store.path_for(new))
    item.fingerprint = planner.fingerprint(plan.key)
    item.reason = f"preset {preset} (host {host})" if preset else None


def _fill(doc: Any, provider_url: str, exports: list[str], tables: list[dict[str, str]],  # noqa: C901
          client_fields: Mapping[str, Mapping[str, Any]], *, only_missing: bool) -> list[str]:
    """Put the file's exports and client fields into the document (a merge adds only what is
    missing, and leaves a client table the profile has alone); what was added."""
    added: list[str] = []
    if "run" not in doc:
        doc.add("run", tomlkit.table())
    run = doc["run"]
    if "export" not in run:
        run["export"] = tomlkit.array()
    current = run["export"]
    families = {x for x in current if isinstance(x, str)}
    named = {n for x in current if not isinstance(x, str) for k, n in dict(x).items() if k != "family"}
    for e in exports:
        if e not in families:
            current.insert(len(families), e)
            families.add(e)
            added.append(f"[run].export {e}")
    for t in tables:
        if named & {n for k, n in t.items() if k != "family"}:
            continue  # the profile names these variables already
        inline = tomlkit.inline_table()
        inline.update(t)
        current.append(inline)
        added.append("[run].export {" + ", ".join(f"{k} = {v}" for k, v in t.items()) + "}")
    for tool, fields in client_fields.items():
        if only_missing and tool in doc:
            continue
        if tool not in doc:
            doc.add(tool, tomlkit.table())
            added.append(f"[{tool}]")
        table = doc[tool]
        for k, v in fields.items():
            if k == "base_url" and norm_url(v) == norm_url(provider_url):
                continue  # the provider's URL already
            table[k] = v
    return added


# --- writing ---------------------------------------------------------------------------------------

def apply(planner: Planner, plan: EnvPlan) -> None:
    """The key into the keyring, then the profile (atomically); a failed write takes the key back."""
    item = plan.item
    if item is None or item.action not in ("created", "merged") or plan.profile is None:
        return
    assert plan.profile_text is not None and plan.key is not None and plan.key_id is not None
    previous: str | None = None
    stored = plan.key_state == "stored"
    if stored:
        previous = planner.keys.set(plan.key_id, plan.key)
    try:
        planner.store.save_text(plan.profile, plan.profile_text, create=plan.create, expected=plan.original)
    except CcsError as exc:
        if stored:
            planner.keys.undo_set(plan.key_id, plan.key, previous)
        item.action, item.reason, item.path = "error", f"could not write profile {plan.profile!r}: {exc}", None


def _without(text: str, cut: list[Entry], plan: EnvPlan) -> str:
    """``text`` without the lines of ``cut``; in a shell file a comment naming the key id takes their place."""
    out, pos = [], 0
    for e in cut:
        out.append(text[pos:e.start])
        if plan.env.shell:
            newline = text[e.start:e.end][len(text[e.start:e.end].rstrip("\r\n")):] or "\n"
            out.append(f"# {e.name}: in the OS keyring under key id {plan.key_id!r} "
                       f"(moved by ccs import env; `ccs run {plan.profile} -- …` sets it){newline}")
        pos = e.end
    out.append(text[pos:])
    return "".join(out)


def scrub(planner: Planner, plan: EnvPlan) -> None:
    """Remove the lines that hold the key itself (a comment naming the key id takes their place in a
    shell file); lines that referenced it are reported, other bytes kept as they were."""
    entry: dict[str, Any] = {"path": str(plan.path), "removed": [], "remaining": None, "note": None}
    plan.report.scrubbed.append(entry)
    item = plan.item
    if plan.key is None or item is None or item.action == "error" or not plan.key_id:
        entry["note"] = "not scrubbed: no key was imported, so the file keeps it"
        return
    if not planner.dry_run and planner.keys.get(plan.key_id) != plan.key:
        entry["note"] = f"not scrubbed: the keyring does not hold this key under {plan.key_id!r}, so the file keeps it"
        return
    real = plan.path.resolve()
    try:
        text, _ = read_env_file(real)
    except UsageError as exc:
        entry["note"] = f"not scrubbed: {exc}"
        return
    if text != plan.text:
        entry["note"] = "not scrubbed: the file changed since it was read; run the import again"
        return
    cut = [e for e in plan.env.entries if e.literal and e.value == plan.key]
    referencing = [e for e in plan.env.entries if e.refs and plan.key in e.value]
    new_text = _without(text, cut, plan)
    entry["removed"] = [f"line {e.line} {e.name}" for e in cut]
    if referencing:
        entry["referencing"] = [f"line {e.line} {e.name}" for e in referencing]
        entry["note"] = (f"{', '.join(entry['referencing'])} referenced the key and will be empty when the file "
                         f"is sourced; `ccs run {plan.profile} -- …` sets {', '.join(e.name for e in referencing)}")
    left = [i for i, line in enumerate(new_text.splitlines(), 1) if plan.key in line]
    if left:
        entry["remaining"] = left
        entry["note"] = ((entry["note"] + "; ") if entry["note"] else "") + (
            f"the key still appears on line {', '.join(map(str, left))}; remove it by hand")
    if cut and not planner.dry_run:
        why = rewrite(real, text.encode("utf-8"), new_text.encode("utf-8"))
        if why:
            entry["removed"], entry["remaining"] = [], None
            entry["note"] = (f"not scrubbed: {why}; the key is in the keyring under {plan.key_id!r}, and the "
                             f"file still holds it on line {', '.join(str(e.line) for e in cut)}")
