"""Key shapes and the output filter, as pure functions: every sample key is found, no sample
non-secret is, and the filter keeps JSON valid while masking."""

from __future__ import annotations

import json

import pytest
from key_samples import KEYS, NON_SECRETS, UNMARKED

from ccswitch_tui.policy.redact import RedactingStream, redact_text
from ccswitch_tui.policy.shapes import looks_like_key, url_secrets
from ccswitch_tui.tools.checker import looks_like_a_key


@pytest.mark.parametrize("name", sorted(KEYS))
def test_every_key_shape_is_recognised(name):
    key = KEYS[name]
    assert looks_like_key(key)
    assert looks_like_a_key(key)  # the key-id check uses the same rule
    assert looks_like_key(f"error: profile {key!r} not found")  # inside a sentence too


@pytest.mark.parametrize("text", NON_SECRETS)
def test_non_secrets_are_not_keys(text):
    assert not looks_like_key(text)
    assert redact_text(text) == text


def test_unmarked_keys_need_no_prefix_list():
    from ccswitch_tui.policy import shapes

    for key in UNMARKED.values():
        assert not shapes._MARKED.fullmatch(key)
        assert looks_like_key(key)


@pytest.mark.parametrize("name", sorted(KEYS))
def test_filter_masks_keys_and_keeps_json_valid(name):
    key = KEYS[name]
    doc = {"error": f"bad id {key}", "nested": {"v": key, "line": f"a\n{key}\tb", "esc": f"\u00e9{key}"}}
    for text in (json.dumps(doc), json.dumps(doc, ensure_ascii=False), json.dumps(doc, indent=2)):
        out = redact_text(text)
        assert key not in out
        assert key[8:-8] not in out
        back = json.loads(out)  # still valid JSON
        assert set(back) == {"error", "nested"}


@pytest.mark.parametrize("url,secret", [
    ("https://alice:hunter2pass@gw.example/v1", "hunter2pass"),
    ("https://TOKENVALUE123@gw.example/v1", "TOKENVALUE123"),
    ("https://gw.example/v1?key=abc123short", "abc123short"),
    ("https://gw.example/v1?model=m&api_key=zz9short", "zz9short"),
    ("https://gw.example/v1?access_token=tok-9", "tok-9"),
    ("http://bob:pw0rd@proxy.local:3128", "pw0rd"),
    (f"https://gw.example/{KEYS['glm']}/v1", KEYS["glm"]),
])
def test_url_credentials(url, secret):
    assert url_secrets(url)
    out = redact_text(f"base_url {url} refused")
    assert secret not in out
    assert "gw.example" in out or "proxy.local" in out


def test_clean_urls_have_no_credentials():
    for url in ("https://api.deepseek.com/anthropic", "http://127.0.0.1:8080/v1?model=gpt-4.1&stream=true",
                "https://open.bigmodel.cn/api/coding/paas/v4"):
        assert url_secrets(url) == []
        assert redact_text(url) == url


def test_stream_redacts_lines_written_in_pieces():
    import io

    inner = io.StringIO()
    stream = RedactingStream(inner)
    key = KEYS["glm"]
    stream.write("start " + key[:10])
    stream.write(key[10:] + " end\nnext")
    assert key not in inner.getvalue() and "start" in inner.getvalue()
    stream.flush()
    assert inner.getvalue().endswith("next")
    with pytest.raises(AttributeError):
        stream.buffer  # noqa: B018 — nothing may go around the filter


@pytest.mark.timeout(60)
def test_a_long_run_of_token_characters_is_scanned_in_linear_time():
    """A 1 MiB base64 blob (an image in a request body, a hostile provider's answer) once took
    minutes: a URL-scheme pattern rescanned the run from every position. It must be one pass."""
    import random
    import string

    from ccswitch_tui.policy.redact import redact_text

    rng = random.Random(7)
    blob = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(1 << 20))
    assert redact_text(blob + " https://user:pw@host/x").endswith("https://***@host/x")


def test_redacted_json_stays_json():
    """A manifest's argv holding `?key=…"` printed as JSON: the value is hidden, the escaped quote
    that closes the string is kept (it was eaten, and `ccs runs --json` printed invalid JSON)."""
    import json

    from ccswitch_tui.policy.redact import redact_text

    text = json.dumps({"argv": ['curl', 'https://h/x?key=abc"', 'https://h/y?token=zzz\\']})
    out = redact_text(text)
    data = json.loads(out)
    assert "abc" not in out and "zzz" not in out
    assert data["argv"][0] == "curl" and data["argv"][1].startswith("https://h/x?key=")
