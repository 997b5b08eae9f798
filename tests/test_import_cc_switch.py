"""`ccs import cc-switch`: fixture databases and config.json files built from CC Switch's schema, the
resulting profiles field by field, keys in the real Secret Service and in no file, idempotence,
dry runs, and bad input (missing, locked, foreign databases; malformed rows; unknown apps)."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import uuid
from pathlib import Path

import pytest
from conftest import forget_indexed_keys

from ccswitch_tui.importers.cc_switch import SourceError, plan_cc_switch, read_db
from ccswitch_tui.importers.planner import Planner
from ccswitch_tui.keys.keyring import SERVICE, KeyStore
from ccswitch_tui.paths import Paths
from ccswitch_tui.profiles.store import Store

SCHEMA = """
CREATE TABLE providers (
    id TEXT NOT NULL,
    app_type TEXT NOT NULL,
    name TEXT NOT NULL,
    settings_config TEXT NOT NULL,
    website_url TEXT,
    category TEXT,
    created_at INTEGER,
    sort_index INTEGER,
    notes TEXT,
    icon TEXT,
    icon_color TEXT,
    meta TEXT NOT NULL DEFAULT '{}',
    is_current BOOLEAN NOT NULL DEFAULT 0,
    in_failover_queue BOOLEAN NOT NULL DEFAULT 0,
    PRIMARY KEY (id, app_type)
)
"""


def make_db(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.execute(SCHEMA)
    for i, r in enumerate(rows):
        settings = r["settings"] if isinstance(r["settings"], str) else json.dumps(r["settings"])
        con.execute(
            "INSERT INTO providers (id, app_type, name, settings_config, website_url, category, created_at, "
            "sort_index, notes, meta, is_current) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (r["id"], r["app"], r["name"], settings, r.get("website"), r.get("category", "custom"),
             1_700_000_000_000 + i, i, r.get("notes"), json.dumps(r.get("meta", {})), int(r.get("current", 0))),
        )
    con.commit()
    con.close()
    return path


def claude_row(pid, name, key, base, **env):
    return {"id": pid, "app": "claude", "name": name,
            "settings": {"env": {"ANTHROPIC_BASE_URL": base, "ANTHROPIC_AUTH_TOKEN": key, **env}}}


def codex_row(pid, name, key, config):
    return {"id": pid, "app": "codex", "name": name, "settings": {"auth": {"OPENAI_API_KEY": key}, "config": config}}


class World:
    """One test's keys, names and files: unique per test, because the keyring is shared."""

    def __init__(self, tmp: Path, paths: Paths):
        self.tag = uuid.uuid4().hex[:6]
        self.home = tmp / "home"
        self.paths = paths
        self.db = self.home / ".cc-switch" / "cc-switch.db"
        self.k1 = f"sk-ds-{uuid.uuid4().hex}"
        self.k2 = f"sk-kimi-{uuid.uuid4().hex}"
        self.k3 = f"sk-relay-{uuid.uuid4().hex}"
        self.other = f"sk-other-{uuid.uuid4().hex}"

    def env(self) -> dict[str, str]:
        return {**os.environ, "HOME": str(self.home), "CCS_HOME": str(self.paths.profiles.parent)}

    def keys(self) -> list[str]:
        return [self.k1, self.k2, self.k3, self.other]

    def standard_rows(self) -> list[dict]:
        t = self.tag
        ds = claude_row("ds", f"DeepSeek {t}", self.k1, "https://api.deepseek.com/anthropic",
                        ANTHROPIC_MODEL="deepseek-v4-pro", ANTHROPIC_DEFAULT_OPUS_MODEL="deepseek-v4-pro",
                        ANTHROPIC_DEFAULT_SONNET_MODEL="deepseek-v4-pro",
                        ANTHROPIC_DEFAULT_HAIKU_MODEL="deepseek-v4-flash",
                        CLAUDE_CODE_SUBAGENT_MODEL="deepseek-v4-flash",
                        API_TIMEOUT_MS=600000, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                        SOME_API_KEY="not-imported")
        ds["website"] = "https://platform.deepseek.com"
        return [
            ds,
            codex_row("ds-codex", f"DeepSeek {t}", self.k1,
                      '# from a guide\nmodel_provider = "deepseek"\nmodel = "deepseek-v4-pro"\n'
                      'model_reasoning_effort = "high"\n\n[model_providers.deepseek]\nname = "DeepSeek"\n'
                      'base_url = "https://api.deepseek.com/v1"\nwire_api = "chat"\nrequires_openai_auth = true\n'),
            {"id": "kimi", "app": "claude", "name": f"Kimi 月之暗面 {t}",
             "notes": "Kimi K2 for Claude Code\nsecond line",
             "meta": {"apiKeyField": "ANTHROPIC_API_KEY"},
             "settings": {"env": {"ANTHROPIC_BASE_URL": "https://api.moonshot.cn/anthropic/",
                                  "ANTHROPIC_API_KEY": self.k2, "ANTHROPIC_AUTH_TOKEN": self.other,
                                  "ANTHROPIC_MODEL": "kimi-k2"}}},
            codex_row("relay", f"Relay {t}", self.k3,
                      'model_provider = "openai"\nmodel = "gpt-4.1"\n\n[model_providers.openai]\nname = "Relay"\n'
                      'base_url = "https://relay.example.com/v1"\n'),
            # the same key as Kimi under another name and host: one key id for both
            claude_row("mirror", f"Mirror {t}", self.k2, "https://mirror.example.net/api"),
            # an exact duplicate of the DeepSeek row
            {**ds, "id": "ds-copy"},
            {"id": "broken", "app": "claude", "name": f"Broken {t}", "settings": '{"env": {"ANTHROPIC_BASE_URL": '},
            {"id": "gem", "app": "gemini", "name": f"Gemini {t}",
             "settings": {"env": {"GEMINI_API_KEY": self.other}}},
            {"id": "official", "app": "claude", "name": f"Claude Official {t}", "settings": {"env": {}}},
        ]


@pytest.fixture
def world(tmp_path, ccs_home, secret_service):
    w = World(tmp_path, ccs_home)
    yield w
    forget_indexed_keys(ccs_home)


def all_files_text(root: Path) -> str:
    out = []
    for p in root.rglob("*"):
        if p.is_file():
            out.append(p.read_bytes().decode("utf-8", "replace"))
    return "\n".join(out)


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(root.rglob("*")) if p.is_file()}


def by_source(report: dict) -> dict[str, dict]:
    return {it["source"]: it for it in report["items"]}


def test_import_maps_every_field_and_keeps_keys_in_the_keyring_only(world, ccs):
    import keyring

    make_db(world.db, world.standard_rows())
    db_hash = hashlib.sha256(world.db.read_bytes()).hexdigest()
    r = ccs("import", "cc-switch", "--json", env=world.env())
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    t = world.tag
    assert report["import"] == "cc-switch" and report["dry_run"] is False
    assert report["read"] == [str(world.db)]
    assert report["summary"] == {"created": 4, "merged": 1, "unchanged": 0, "skipped": 3, "error": 1}
    items = by_source(report)
    assert set(items) == {f"db:claude/{x}" for x in ("ds", "kimi", "mirror", "ds-copy", "broken", "official")} | {
        "db:codex/ds-codex", "db:codex/relay", "db:gemini/gem"}

    ds_name, kimi_name, relay_name, mirror_name = (f"deepseek-{t}", f"kimi-{t}", f"relay-{t}", f"mirror-{t}")
    assert items["db:claude/ds"]["action"] == "created" and items["db:claude/ds"]["profile"] == ds_name
    assert items["db:claude/ds"]["key"] == "stored" and items["db:claude/ds"]["fingerprint"].startswith("fp:")
    assert any("SOME_API_KEY" in w for w in items["db:claude/ds"]["warnings"])
    merged = items["db:codex/ds-codex"]
    assert merged["action"] == "merged" and merged["profile"] == ds_name
    assert "api.deepseek.com" in merged["reason"]
    assert not any("wire_api" in w for w in merged["warnings"])  # a Chat Completions provider stays one
    assert items["db:claude/ds-copy"]["action"] == "skipped"
    assert "duplicate of db:claude/ds" in items["db:claude/ds-copy"]["reason"]
    assert items["db:claude/broken"]["action"] == "error"
    assert "not valid JSON" in items["db:claude/broken"]["reason"]
    assert items["db:gemini/gem"]["action"] == "skipped" and "'gemini'" in items["db:gemini/gem"]["reason"]
    assert items["db:claude/official"]["action"] == "skipped"
    assert items["db:codex/relay"]["profile"] == relay_name
    assert any("built into Codex" in w for w in items["db:codex/relay"]["warnings"])
    assert items["db:claude/mirror"]["key_id"] == items["db:claude/kimi"]["key_id"] == kimi_name
    assert items["db:claude/mirror"]["key"] == "shared"
    assert any("second, different key" in w for w in items["db:claude/kimi"]["warnings"])

    store = Store(world.paths)
    assert store.names() == sorted([ds_name, kimi_name, relay_name, mirror_name])
    ds = store.load(ds_name)
    assert ds.provider.name == f"DeepSeek {t}"
    assert ds.provider.key == ds_name
    assert ds.provider.website == "https://platform.deepseek.com"
    assert ds.side("claude").base_url == "https://api.deepseek.com/anthropic"
    assert ds.side("claude").auth == "token"
    c = ds.side("claude")
    assert (c.model, c.opus, c.sonnet, c.haiku, c.subagent) == (
        "deepseek-v4-pro", "deepseek-v4-pro", "deepseek-v4-pro", "deepseek-v4-flash", "deepseek-v4-flash")
    assert dict(ds.side("claude").env) == {"API_TIMEOUT_MS": "600000", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    assert ds.side("codex").base_url == "https://api.deepseek.com/v1"
    assert ds.side("codex").model == "deepseek-v4-pro"
    assert ds.side("codex").provider_id == "deepseek"
    assert ds.side("codex").reasoning_effort == "high"
    assert ds.side("codex").wire_api == "chat"
    assert ds.side("run").export == ("openai",)
    text = store.read_text(ds_name)
    assert text.startswith("# Imported by ccs")
    assert str(world.db) in text and "(id ds)" in text and "(id ds-codex)" in text

    kimi = store.load(kimi_name)
    assert kimi.provider.name == f"Kimi 月之暗面 {t}"
    assert kimi.description == "Kimi K2 for Claude Code"
    assert kimi.side("claude").auth == "api-key"
    assert kimi.side("claude").base_url == "https://api.moonshot.cn/anthropic"
    assert kimi.side("claude").model == "kimi-k2"
    assert kimi.side("codex") is None and kimi.side("run").export == ("anthropic",)

    relay = store.load(relay_name)
    assert relay.side("claude") is None
    assert relay.side("codex").base_url == "https://relay.example.com/v1"
    assert relay.side("codex").model == "gpt-4.1"
    assert relay.side("codex").provider_id == relay_name  # never the built-in "openai"

    mirror = store.load(mirror_name)
    assert mirror.key_id == kimi_name

    # keys: in the real Secret Service, under the reported ids; in no file at all
    assert keyring.get_password(SERVICE, ds_name) == world.k1
    assert keyring.get_password(SERVICE, kimi_name) == world.k2
    assert keyring.get_password(SERVICE, relay_name) == world.k3
    assert keyring.get_password(SERVICE, f"broken-{t}") is None
    everything = all_files_text(world.paths.profiles.parent)
    for k in world.keys():
        assert k not in everything
        assert k not in r.stdout and k not in r.stderr
    assert hashlib.sha256(world.db.read_bytes()).hexdigest() == db_hash  # CC Switch's file untouched


def test_reimport_changes_nothing(world, ccs):
    make_db(world.db, world.standard_rows())
    first = ccs("import", "cc-switch", "--json", env=world.env())
    assert first.returncode == 0, first.stderr
    before = snapshot(world.paths.profiles.parent)
    second = ccs("import", "cc-switch", "--json", env=world.env())
    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)
    assert report["summary"]["created"] == 0 and report["summary"]["merged"] == 0
    actions = {s: it["action"] for s, it in by_source(report).items()}
    assert actions["db:claude/ds"] == actions["db:codex/ds-codex"] == actions["db:codex/relay"] == "unchanged"
    assert actions["db:claude/kimi"] == actions["db:claude/mirror"] == "unchanged"
    assert actions["db:claude/ds-copy"] == "skipped"
    assert snapshot(world.paths.profiles.parent) == before  # same bytes, same mtimes: nothing rewritten
    human = ccs("import", "cc-switch", env=world.env())
    assert human.returncode == 0
    assert human.stdout.strip().splitlines()[-1].startswith("0 created, 0 merged, 5 unchanged, 3 skipped, 1 error")


def test_dry_run_writes_nothing(world, ccs):
    import keyring

    make_db(world.db, world.standard_rows())
    r = ccs("import", "cc-switch", "--dry-run", env=world.env())
    assert r.returncode == 0, r.stderr
    assert "dry run, nothing written: 4 to create, 1 to merge" in r.stdout
    assert f"deepseek-{world.tag}" in r.stdout
    assert not world.paths.profiles.parent.exists()
    assert keyring.get_password(SERVICE, f"deepseek-{world.tag}") is None


def test_existing_profile_is_matched_by_content_and_never_overwritten(world, ccs):
    t = world.tag
    make_db(world.db, world.standard_rows()[:2])
    assert ccs("import", "cc-switch", env=world.env()).returncode == 0
    store = Store(world.paths)
    name = f"deepseek-{t}"
    # the user edits the imported profile: a re-import reports the difference and keeps the edit
    edited = store.read_text(name).replace('model = "deepseek-v4-pro"\nopus', 'model = "deepseek-v4-flash"\nopus')
    assert edited != store.read_text(name)
    store.save_text(name, edited)
    r = ccs("import", "cc-switch", "--json", env=world.env())
    items = by_source(json.loads(r.stdout))
    assert items["db:claude/ds"]["action"] == "skipped"
    assert "differs in claude.model (deepseek-v4-flash → deepseek-v4-pro)" in items["db:claude/ds"]["reason"]
    assert items["db:codex/ds-codex"]["action"] == "unchanged"
    assert store.read_text(name) == edited
    assert store.names() == [name]

    # a rotated key at the same endpoint is not imported as a look-alike second profile
    rows = world.standard_rows()[:1]
    rows[0]["settings"]["env"]["ANTHROPIC_AUTH_TOKEN"] = world.other
    world.db.unlink()
    make_db(world.db, rows)
    r = ccs("import", "cc-switch", "--json", env=world.env())
    item = by_source(json.loads(r.stdout))["db:claude/ds"]
    assert item["action"] == "skipped" and "different key" in item["reason"]
    assert f"ccs key set {name}" in item["reason"]
    assert store.names() == [name]


def test_name_collisions_get_a_suffix(world, ccs):
    t = world.tag
    store = Store(world.paths)
    unrelated = (f'schema = 1\n[provider]\nname = "Someone else"\nbase_url = "https://elsewhere.example"\n'
                 f'key = "unrelated-{t}"\n[claude]\n')
    store.save_text(f"deepseek-{t}", unrelated, create=True)
    make_db(world.db, world.standard_rows()[:1] + [
        claude_row("ds-2", f"DeepSeek {t}", world.k1, "https://api.deepseek.com/anthropic",
                   ANTHROPIC_MODEL="deepseek-v4-flash")])
    r = ccs("import", "cc-switch", "--json", env=world.env())
    items = by_source(json.loads(r.stdout))
    assert items["db:claude/ds"]["profile"] == f"deepseek-{t}-2"
    # same provider, same key, other models: its own profile, sharing the key id
    assert items["db:claude/ds-2"]["profile"] == f"deepseek-{t}-3"
    assert items["db:claude/ds-2"]["key"] == "shared"
    assert items["db:claude/ds-2"]["key_id"] == items["db:claude/ds"]["key_id"] == f"deepseek-{t}"
    assert store.read_text(f"deepseek-{t}") == unrelated


def test_legacy_config_json_is_read_and_the_database_wins(world, ccs):
    t = world.tag
    make_db(world.db, world.standard_rows()[:1])
    stale = claude_row("ds", f"DeepSeek {t}", world.k1, "https://api.deepseek.com/anthropic",
                       ANTHROPIC_MODEL="an-old-model")
    legacy = {
        "claude": {"providers": {
            "ds": {"id": "ds", "name": stale["name"], "settingsConfig": stale["settings"]},
            "glm": {"id": "glm", "name": f"GLM {t}", "websiteUrl": "https://open.bigmodel.cn",
                    "settingsConfig": {"env": {"ANTHROPIC_BASE_URL": "https://open.bigmodel.cn/api/anthropic",
                                               "ANTHROPIC_AUTH_TOKEN": world.k2}}},
        }, "current": "ds"},
        "codex": {"providers": {}, "current": ""},
        "mcp": {"servers": {}},
    }
    (world.db.parent / "config.json").write_text(json.dumps(legacy))
    r = ccs("import", "cc-switch", "--json", env=world.env())
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["read"] == [str(world.db), str(world.db.parent / "config.json")]
    items = by_source(report)
    assert "config.json:claude/ds" not in items  # superseded by the database row
    assert items["config.json:claude/glm"]["action"] == "created"
    glm = Store(world.paths).load(f"glm-{t}")
    assert glm.side("claude").base_url == "https://open.bigmodel.cn/api/anthropic"
    assert glm.provider.website == "https://open.bigmodel.cn"
    assert Store(world.paths).load(f"deepseek-{t}").side("claude").model == "deepseek-v4-pro"


def test_missing_database_is_one_line_exit_2(world, ccs):
    r = ccs("import", "cc-switch", env=world.env())
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "no CC Switch data could be read" in lines[0] and "not found" in lines[0]
    assert "Traceback" not in r.stderr
    r = ccs("import", "cc-switch", "--db", str(world.home / "nowhere.db"), env=world.env())
    assert r.returncode == 2 and "nowhere.db: not found" in r.stderr


def test_foreign_databases_are_refused_and_the_rest_is_imported(world, ccs):
    world.db.parent.mkdir(parents=True)
    con = sqlite3.connect(world.db)
    con.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    con.commit()
    con.close()
    r = ccs("import", "cc-switch", env=world.env())
    assert r.returncode == 2 and "not a CC Switch database" in r.stderr and "Traceback" not in r.stderr

    world.db.write_bytes(b"this is not sqlite at all" * 100)
    r = ccs("import", "cc-switch", env=world.env())
    assert r.returncode == 2 and "not a SQLite database" in r.stderr

    # a readable config.json beside the bad database: one error line, the rest imported
    row = claude_row("z", f"Zai {world.tag}", world.k3, "https://api.z.ai/api/anthropic")
    (world.db.parent / "config.json").write_text(json.dumps(
        {"claude": {"providers": {"z": {"id": "z", "name": row["name"], "settingsConfig": row["settings"]}}}}))
    r = ccs("import", "cc-switch", "--json", env=world.env())
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["summary"]["error"] == 1 and report["summary"]["created"] == 1
    err = [it for it in report["items"] if it["action"] == "error"][0]
    assert err["source"] == str(world.db) and "not a SQLite database" in err["reason"]


def test_locked_database(world, ccs_home):
    make_db(world.db, world.standard_rows()[:1])
    holder = sqlite3.connect(world.db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(SourceError, match="locked by another program"):
            read_db(world.db, timeout=0.05)
        planner = Planner(Store(ccs_home), KeyStore(ccs_home), dry_run=True)
        (world.db.parent / "config.json").write_text(json.dumps({"claude": {"providers": {
            "x": {"name": f"Other {world.tag}", "settingsConfig": {"env": {
                "ANTHROPIC_BASE_URL": "https://other.example/api", "ANTHROPIC_AUTH_TOKEN": world.k2}}}}}}))
        report = plan_cc_switch(planner, world.db, world.db.parent / "config.json", timeout=0.05)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    actions = [(it.source, it.action) for it in report.items]
    assert actions == [(str(world.db), "error"), ("config.json:claude/x", "created")]
    assert "locked" in report.items[0].reason


def test_bad_rows_are_reported_one_line_each(world, ccs):
    t = world.tag
    make_db(world.db, [
        claude_row("good", f"Good {t}", world.k1, "https://good.example/api"),
        claude_row("nourl", f"NoScheme {t}", world.k2, "good.example/api"),
        {"id": "list", "app": "claude", "name": f"List {t}", "settings": "[1, 2]"},
        codex_row("badtoml", f"BadToml {t}", world.k3, 'model = "x"\n[model_providers.x\n'),
        codex_row("nomodel", f"NoModel {t}", world.k3,
                  'model_provider = "p"\n[model_providers.p]\nbase_url = "https://p.example/v1"\n'),
        codex_row("noentry", f"NoEntry {t}", world.k3, 'model_provider = "ghost"\nmodel = "m"\n'),
        {"id": "oc", "app": "opencode", "name": f"OpenCode {t}", "settings": {}},
        {"id": "bedrock", "app": "claude", "name": f"Bedrock {t}",
         "settings": {"env": {"CLAUDE_CODE_USE_BEDROCK": "1", "ANTHROPIC_MODEL": "x"}}},
        {"id": "badmeta", "app": "claude", "name": f"BadMeta {t}", "meta": "not an object",
         "settings": {"env": {"ANTHROPIC_BASE_URL": "https://badmeta.example", "ANTHROPIC_AUTH_TOKEN": world.k2}}},
    ])
    r = ccs("import", "cc-switch", "--json", env=world.env())
    assert r.returncode == 0, r.stderr
    items = by_source(json.loads(r.stdout))
    expect = {
        "db:claude/good": ("created", None),
        "db:claude/nourl": ("error", "is not an http(s) URL"),
        "db:claude/list": ("error", "not a JSON object"),
        "db:codex/badtoml": ("error", "not valid TOML (line 2"),
        "db:codex/nomodel": ("error", "no `model`"),
        "db:codex/noentry": ("error", "no [model_providers.ghost] table"),
        "db:opencode/oc": ("skipped", "'opencode' is not supported"),
        "db:claude/bedrock": ("skipped", "CLAUDE_CODE_USE_BEDROCK"),
        "db:claude/badmeta": ("created", None),
    }
    for source, (action, words) in expect.items():
        assert items[source]["action"] == action, (source, items[source])
        if words:
            assert words in items[source]["reason"], (source, items[source]["reason"])
    assert Store(world.paths).names() == sorted([f"good-{t}", f"badmeta-{t}"])
    human = ccs("import", "cc-switch", "--dry-run", env=world.env()).stdout
    assert "Traceback" not in human
    for k in world.keys():
        assert k not in all_files_text(world.paths.profiles.parent) and k not in r.stdout


def test_a_profile_that_cannot_be_written_takes_back_its_key(world, ccs_home):
    import keyring

    t = world.tag
    make_db(world.db, [claude_row("a", f"Alpha {t}", world.k1, "https://alpha.example/api"),
                       claude_row("b", f"Beta {t}", world.k2, "https://beta.example/api")])
    store = Store(ccs_home)
    planner = Planner(store, KeyStore(ccs_home))
    report = plan_cc_switch(planner, world.db, None)
    # another profile of the planned name appears between planning and writing
    intruder = 'schema = 1\n[provider]\nname = "x"\nbase_url = "https://x.example"\nkey = "x"\n'
    store.save_text(f"alpha-{t}", intruder, create=True)
    planner.apply()
    actions = {it.source: (it.action, it.profile) for it in report.items}
    assert actions == {"db:claude/a": ("error", f"alpha-{t}"), "db:claude/b": ("created", f"beta-{t}")}
    assert "already exists" in report.items[0].reason
    assert store.read_text(f"alpha-{t}") == intruder
    assert keyring.get_password(SERVICE, f"alpha-{t}") is None
    assert keyring.get_password(SERVICE, f"beta-{t}") == world.k2
