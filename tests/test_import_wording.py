"""What an import says: a dry run speaks in the conditional (nothing was stored), and CC Switch's legacy
config.json alone is a complete source (its database being absent is no error)."""

from __future__ import annotations

import json

from test_import_cc_switch import claude_row, world  # noqa: F401  (the fixture)
from test_import_live import live  # noqa: F401  (the fixture)


def test_claude_dry_run_says_the_key_would_be_stored(live, ccs):  # noqa: F811
    import keyring

    from ccswitch_tui.keys.keyring import SERVICE

    name = f"ds-{live.tag}"
    live.write_settings()
    r = ccs("import", "claude", "--name", name, "--dry-run", env=live.env())
    assert r.returncode == 0, r.stderr
    assert "dry run, nothing written" in r.stdout
    assert f"key {name} (would store" in r.stdout
    assert "stored" not in r.stdout.replace("would store", "")
    assert keyring.get_password(SERVICE, name) is None  # and indeed nothing was stored

    r = ccs("import", "claude", "--name", name, env=live.env())  # the real import still says stored
    assert r.returncode == 0, r.stderr
    assert f"key {name} (stored" in r.stdout and "would store" not in r.stdout


def test_cc_switch_legacy_config_json_alone_counts_no_error(world, ccs):  # noqa: F811
    row = claude_row("z", f"Zai {world.tag}", world.k3, "https://api.z.ai/api/anthropic")
    world.db.parent.mkdir(parents=True)
    legacy = world.db.parent / "config.json"
    legacy.write_text(json.dumps(
        {"claude": {"providers": {"z": {"id": "z", "name": row["name"], "settingsConfig": row["settings"]}}}}))
    assert not world.db.exists()
    r = ccs("import", "cc-switch", "--json", env=world.env())
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["summary"]["error"] == 0 and report["summary"]["created"] == 1
    assert report["read"] == [str(legacy)]
    assert not [it for it in report["items"] if it["action"] == "error"]

    r = ccs("import", "cc-switch", "--dry-run", env=world.env())
    assert r.returncode == 0, r.stderr
    assert "0 error" in r.stdout and "1 error" not in r.stdout
