"""The output filter masks secrets, not ids: every key shape of every provider ccs has a preset for
is masked wherever it appears, and every id and name ccs prints (session and resume ids, request
and response ids, UUIDs, commits, profile names) passes untouched."""

from __future__ import annotations

import json

import pytest
from filter_corpus import IDS_AND_NAMES, OTHER_KEYS, PRESET_KEYS

from ccswitch_tui.policy.redact import redact_text
from ccswitch_tui.policy.shapes import holds_credential, looks_like_key
from ccswitch_tui.profiles.presets import list_presets

ALL_KEYS = [k for keys in PRESET_KEYS.values() for k in keys] + OTHER_KEYS


def test_every_preset_has_key_shapes_in_the_corpus():
    names = {p.name for p in list_presets()}
    assert names and names <= set(PRESET_KEYS), f"add key shapes for {sorted(names - set(PRESET_KEYS))}"


@pytest.mark.parametrize("key", ALL_KEYS, ids=lambda k: k[:12])
def test_every_key_is_masked_wherever_it_is_printed(key):
    assert looks_like_key(key)
    for text in (key, f"error: key {key} refused", f"Authorization: Bearer {key}", f"https://gw/v1?x={key}",
                 json.dumps({"detail": key}), f"ccs launch p kilo -- --session {key}", f"taotoken: {key}"):
        out = redact_text(text)
        assert key not in out, text
        assert key[6:-5] not in out, text


@pytest.mark.parametrize("name", sorted(IDS_AND_NAMES))
def test_ids_and_names_pass_untouched(name):
    text = IDS_AND_NAMES[name]
    assert redact_text(text) == text
    assert redact_text(json.dumps({"v": text})) == json.dumps({"v": text})


def test_a_word_ending_in_token_is_no_credential_header():
    """`taotoken: 4)` read as a header `…token: <value>`: the count and the `)` were lost."""
    assert not holds_credential("taotoken: 4)")
    assert redact_text("(oai: 5, taotoken: 4); next") == "(oai: 5, taotoken: 4); next"
    # a header whose last word is token still hides its value
    for header in ("x-auth-token: abc123", "access_token: abc123", "token: abc123", "X-Gateway-Token: zz9"):
        assert holds_credential(header), header
        assert "abc123" not in redact_text(header) and "zz9" not in redact_text(header)


def test_a_key_after_an_id_label_is_still_masked():
    """Only the forms of ids pass; a key is not let through by what stands before it."""
    key = PRESET_KEYS["glm"][0]
    for text in (f"--session {key}", f"session id: {key}", f"request-id: {key}", f"resume {key}"):
        assert key not in redact_text(text)
    hex40 = "101564350c91035d2104403d588a4c6862754eaa"
    assert hex40 not in redact_text(f"key {hex40}")  # the same 40 hex a commit has, not labelled as one


def test_the_cli_prints_ids_and_counts_whole(ccs, base_env):
    """Through the real `ccs` process and its filter: a session id typed as a run's argument comes
    back whole from `ccs runs`, and `ccs usage` names a preset's profile with its count."""
    env = {**base_env, "TT_KEY": PRESET_KEYS["taotoken"][0]}
    assert ccs("new", "taotoken", "--preset", "taotoken", "--key", "env:TT_KEY", env=env).returncode == 0
    session = "ses_db616f0f3ffeTITUQ006lk5UKa"
    for _ in range(2):
        r = ccs("run", "taotoken", "--", "true", "--session", session, env=env)
        assert r.returncode == 0, r.stderr
    runs = json.loads(ccs("runs", "--json", env=env).stdout)["runs"]
    assert [r["argv"][-1] for r in runs] == [session, session]
    out = ccs("runs", env=env).stdout
    assert session in out, out
    usage = ccs("usage", env=env)
    assert "(taotoken: 2)" in usage.stdout, usage.stdout
