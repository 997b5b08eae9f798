"""A secret in every form it travels in (``policy.secret_forms``): the filters on what reaches the child,
what reaches disk and what ccs prints match the key and each ``[secrets]`` value exact, URL-encoded (either
hex case, any mixture, ``+``/space), JSON-escaped (``\\/``, ``\\uXXXX``), case-folded and base64/base64url
(alone or inside a longer base64 text), across chunk boundaries; and the key put into a URL is
percent-encoded, so a ``+`` in it is not read as a space upstream.

Two keys: one with ``/``, ``+`` and ``=`` (a Baidu Qianfan ``bce-v3/…`` key, a base64 gateway key) and
an ordinary one (GLM-shaped, ``<32 hex>.<16 chars>``); the forms below are written out here, not taken
from the module under test."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import sys
import textwrap
from pathlib import Path
from urllib.parse import quote

import pytest
from hostile_stub import Got, HostileStub, pieces_of, response
from key_samples import GLM, NON_SECRETS
from test_bridge_secrets import dechunked, http_request, raw_exchange, wait_records

from ccswitch_tui.bridge.server import Bridge, BridgeConfig, Route
from ccswitch_tui.policy import mask as mask_of
from ccswitch_tui.policy import redact
from ccswitch_tui.policy.redact import remember
from ccswitch_tui.policy.secret_forms import FORMS, SecretForms

SLASHED = "bce-v3/ALTAK-q8Yb3nT6wPz2Lk9Vd4Rs7/0f3c9d2a7b6e5c4d8a1b0e9f7c6d5a4b3e2c1d0f+Rt2Ab=="
ORDINARY = GLM
OTHER = "gw7Q/x2Lm+Pz94RtYvWq3N=="  # a [secrets] value with the same awkward characters


def forms_of(secret: str) -> dict[str, str]:
    """Every form of ``secret`` a provider has been seen to send, written out by hand."""
    encoded = quote(secret, safe="")
    raw = secret.encode()
    out = {
        "exact": secret,
        "url": encoded,
        "url-lower-hex": re.sub("%[0-9A-F]{2}", lambda m: m.group(0).lower(), encoded),
        "url-slash-kept": quote(secret),  # Python's quote, JavaScript's encodeURI-ish
        "url-slash-only": secret.replace("/", "%2F"),  # a path escape
        "plus-read-as-space": secret.replace("+", " "),
        "json-slash": secret.replace("/", "\\/"),  # PHP's json_encode
        "json-unicode": "".join(f"\\u{ord(c):04x}" for c in secret),
        "json-unicode-upper": "".join(f"\\u{ord(c):04X}" for c in secret),
        "json-unicode-some": "".join(f"\\u{ord(c):04x}" if c in "/+=" or i % 5 == 0 else c
                                     for i, c in enumerate(secret)),
        "json-in-json": json.dumps(secret.replace("/", "\\/"))[1:-1],  # an error quoting a PHP body
        "url-in-url": quote(quote(secret, safe=""), safe=""),  # a redirect's next= parameter
        "upper": secret.upper(),
        "lower": secret.lower(),
        "upper-url": encoded.upper(),
        "b64": base64.b64encode(raw).decode(),
        "b64-unpadded": base64.b64encode(raw).decode().rstrip("="),
        "b64url": base64.urlsafe_b64encode(raw).decode().rstrip("="),
        "basic": base64.b64encode(b"user:" + raw).decode(),
        "basic-shifted": base64.b64encode(b"me:" + raw).decode(),
        "basic-url": base64.urlsafe_b64encode(b"u:" + raw).decode(),
    }
    return {k: v for k, v in out.items() if k == "exact" or v != secret}


def b64_inner(secret: str) -> list[str]:
    """A piece of base64 that only ``secret`` determines, at each offset it can start at."""
    pieces = []
    for offset in range(3):
        encoded = base64.b64encode(b"x" * offset + secret.encode()).decode()
        pieces += [encoded[4:-4], encoded[4:-4].replace("+", "-").replace("/", "_")]
    return pieces


def assert_no_form(data: bytes | str, *secrets: str) -> None:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    for secret in secrets:
        for name, form in forms_of(secret).items():
            at = text.find(form)
            assert at < 0, (name, text[max(0, at - 200):at + 200])
        for piece in b64_inner(secret):
            assert piece not in text, ("base64 inside a longer text", piece)
        for i in range(len(secret) - 9):  # and no 10-character piece of it as it is
            assert secret[i:i + 10] not in text, secret[i:i + 10]


# --- the forms on their own ------------------------------------------------------------------------


@pytest.mark.parametrize("secret", [SLASHED, ORDINARY, OTHER])
def test_every_form_is_found_alone_inside_text_json_and_urls(secret):
    forms = SecretForms([(secret, "TOKEN")], mask_of)
    for name, form in forms_of(secret).items():
        for text in (form, f"see {form}.", f'{{"x":"{form}"}}', f"https://h/cb?key={form}&a=1", f"Basic {form}"):
            out = forms.text(text)
            assert_no_form(out, secret)
            assert forms.data(text.encode()) == out.encode(), name
    # what decodes back to the secret becomes the replacement; another case or base64 becomes the mask
    mask = f"{secret[:3]}…{secret[-4:]}"
    faithful = ("exact", "url", "url-lower-hex", "url-slash-kept", "url-slash-only", "json-slash", "json-unicode",
                "json-unicode-upper", "json-unicode-some")
    for name, form in forms_of(secret).items():
        out = forms.text(f"<{form}>")
        if name in faithful:
            assert out == "<TOKEN>", name
        elif name in ("upper", "lower", "upper-url"):
            assert out == f"<{mask}>", name
        else:  # base64: what only the secret determines is masked; what else it encoded remains
            assert mask in out, (name, out)


def test_the_stream_filter_finds_every_form_wherever_the_chunks_are_cut():
    forms = SecretForms([(SLASHED, "TOKEN"), (OTHER, None)], mask_of)
    for name, form in forms_of(SLASHED).items():
        data = f'data: {{"a":"{form}","b":"{forms_of(OTHER).get(name, OTHER)}"}}\n\n'.encode()
        want = forms.data(data)
        assert_no_form(want, SLASHED, OTHER)
        for cut in range(len(data) + 1):
            s = forms.stream()
            assert s.feed(data[:cut]) + s.feed(data[cut:]) + s.flush() == want, (name, cut)
        s = forms.stream()
        assert b"".join(s.feed(data[i:i + 1]) for i in range(len(data))) + s.flush() == want, name
    s = forms.stream()  # an SSE event's blank line ends nothing a form could begin: nothing is held
    assert s.feed(b'data: {"x":1}\n\n') == b'data: {"x":1}\n\n'


def test_ordinary_text_is_left_as_it_is():
    forms = SecretForms([(SLASHED, "TOKEN"), (ORDINARY, "T2"), (OTHER, None)], mask_of)
    sse = b'data: {"id":"chatcmpl-1","model":"m","choices":[{"delta":{"content":"Hello \\u003cb\\u003e"}}]}\n\n'
    for text in [*NON_SECRETS, sse.decode(), base64.b64encode(b"some other thing entirely").decode(),
                 SLASHED[:-6], ORDINARY[1:], quote(SLASHED[:20], safe="")]:
        assert forms.text(text) == text


def test_the_docs_list_the_forms():
    page = (Path(__file__).resolve().parent.parent / "docs" / "recording.md").read_text()
    for name, _ in FORMS:
        assert f"| {name} |" in page, name


# --- the bridge: what the child gets, what the records keep ----------------------------------------


def echo_every_form(stub: HostileStub) -> None:
    """Answers that quote the credential and the gateway secret they were sent, in every form, in
    every place an answer has; the SSE stream cut inside the forms."""

    def listed(got: Got) -> str:
        key = got.headers["authorization"].removeprefix("Bearer ")
        gw = got.headers["x-gateway-auth"]
        return json.dumps({"error": {"message": "bad credentials", "forms": forms_of(key),
                                     "gateway": forms_of(gw)}}, ensure_ascii=False)

    def location(got: Got) -> list[bytes]:
        key = got.headers["authorization"].removeprefix("Bearer ")
        return response("302 Found", {"Location": f"{stub.url}/v1/cb?key={forms_of(key).get('url-lower-hex', key)}&b="
                                                  f"{base64.b64encode(key.encode()).decode()}",
                                      "X-Echo": key.replace("/", "\\/")}, b"")

    def body(got: Got) -> list[bytes]:
        text = listed(got)
        return response("401 Unauthorized", {"Content-Type": "application/json"},
                        pieces=pieces_of(text, *range(7, len(text.encode()), 23)))

    def stream(got: Got) -> list[bytes]:
        key = got.headers["authorization"].removeprefix("Bearer ")
        events = "".join(f"data: {json.dumps({'choices': [{'delta': {'content': form}}]})}\n\n"
                         for form in forms_of(key).values())
        return response("200 OK", {"Content-Type": "text/event-stream"},
                        pieces=pieces_of(events, *range(11, len(events.encode()), 37)))

    stub.answers.update({"/location": location, "/body": body, "/stream": stream})


@pytest.mark.parametrize("key", [SLASHED, ORDINARY], ids=["slashed", "ordinary"])
def test_no_form_of_a_secret_reaches_the_child_or_a_record(tmp_path, key):
    stub = HostileStub()
    echo_every_form(stub)
    b = Bridge(BridgeConfig(routes=(Route("openai", stub.url + "/v1"),), key=key, extra_secrets=(OTHER,),
                            records_path=tmp_path / "L.requests.jsonl", record_bodies=True)).start()
    try:
        got = b""
        for path in ("/openai/location", "/openai/body", "/openai/stream"):
            got += dechunked(raw_exchange(b.port, http_request("POST", path, b.token, b'{"model":"m"}',
                                                                extra=f"X-Gateway-Auth: {OTHER}\r\n")))
        assert all(g.headers["authorization"] == f"Bearer {key}" for g in stub.seen)  # the provider had them
        assert b"bad credentials" in got and f"cb?key={b.token}&b=".encode() in got  # the answers came
        assert_no_form(got, key, OTHER)
        records = wait_records(b, 3)
        assert len(records) == 3 and "response_body" in records[1]
        assert_no_form(b.records_path.read_bytes(), key, OTHER, b.token)
    finally:
        b.stop()
        stub.close()


def test_the_key_in_a_url_is_percent_encoded(tmp_path):
    """``?key=<token>`` reaches the upstream as ``?key=<the key, percent-encoded>``: a server that reads
    the query gets the key itself, not one with a space where its ``+`` was."""
    from urllib.parse import parse_qs, urlsplit

    stub = HostileStub()
    stub.answers["/models"] = lambda got: response("200 OK", {"Content-Type": "application/json"}, b"{}")
    b = Bridge(BridgeConfig(routes=(Route("gemini", stub.url + "/v1beta"),), key=SLASHED,
                            records_path=tmp_path / "L.requests.jsonl")).start()
    try:
        reply = raw_exchange(b.port, f"GET /gemini/models?key={b.token}&x=1 HTTP/1.1\r\nHost: x\r\n"
                                     "Connection: close\r\n\r\n".encode())
        assert reply.startswith(b"HTTP/1.1 200 OK")
        (seen,) = stub.seen
        assert f"?key={quote(SLASHED, safe='')}&x=1" in seen.path
        assert parse_qs(urlsplit(seen.path).query)["key"] == [SLASHED]
        (record,) = wait_records(b, 1)
        assert_no_form(json.dumps(record), SLASHED)
    finally:
        b.stop()
        stub.close()


# --- end to end: a recorded `ccs run`, its child, its files and ccs's own output ---------------------

CHILD = textwrap.dedent('''
    import os, socket, sys
    from urllib.parse import urlsplit
    base = urlsplit(os.environ["OPENAI_BASE_URL"])
    token, gw = os.environ["OPENAI_API_KEY"], os.environ["MY_GATEWAY_AUTH"]
    got = b""
    for path in ("/location", "/body", "/stream", "/fail?key=" + token):
        with socket.create_connection((base.hostname, base.port)) as s:
            s.sendall((f"POST {base.path}{path} HTTP/1.1\\r\\nHost: x\\r\\nAuthorization: Bearer {token}\\r\\n"
                       f"X-Gateway-Auth: {gw}\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\n{{}}").encode())
            while more := s.recv(65536):
                got += more
    open(sys.argv[1], "wb").write(got)
''')


@pytest.mark.parametrize("key", [SLASHED, ORDINARY], ids=["slashed", "ordinary"])
def test_a_recorded_run_keeps_every_form_from_the_child_the_disk_and_the_terminal(ccs, base_env, tmp_path, key):
    stub = HostileStub()
    echo_every_form(stub)

    def fail(got: Got) -> list[bytes]:  # an error quoting the URL it was sent: the key percent-encoded
        text = f"no model at {got.path} for {got.headers['x-gateway-auth']}"
        return response("404 Not Found", {"Content-Type": "text/plain"}, text.encode())

    stub.answers["/fail"] = fail
    try:
        home = Path(os.environ["CCS_HOME"]) / "profiles"
        home.mkdir(parents=True, exist_ok=True)
        (home / "p.toml").write_text(f'schema = 1\n[provider]\nname = "P"\nbase_url = "{stub.url}/v1"\n'
                                     'key = "env:FORMS_KEY"\n[run]\nexport = ["openai"]\nmodel = "m"\n'
                                     '[secrets]\nMY_GATEWAY_AUTH = "env:FORMS_GW"\n')
        program, out = tmp_path / "child.py", tmp_path / "got"
        program.write_text(CHILD)
        env = {**base_env, "FORMS_KEY": key, "FORMS_GW": OTHER}
        r = ccs("run", "--record", "p", "--", sys.executable, str(program), str(out), env=env, timeout=60)
        assert r.returncode == 0, r.stderr
        got = out.read_bytes()
        assert b"bad credentials" in got and b"no model at" in got
        assert any(quote(key, safe="") in g.path for g in stub.seen)  # the upstream had the key, encoded
        assert_no_form(got, key, OTHER)
        runs = json.loads(ccs("runs", "--json", env=env).stdout)["runs"]
        assert runs[0]["requests"]["error_samples"]  # the failures are in the manifest, masked
        disk = b"".join(p.read_bytes() for p in Path(os.environ["CCS_HOME"]).rglob("*") if p.is_file())
        assert_no_form(disk, key, OTHER)
        report = ccs("runs", "report", "--json", env=env)
        assert_no_form(r.stdout + r.stderr + report.stdout + report.stderr, key, OTHER)
    finally:
        stub.close()


def test_ccs_own_output_masks_every_form_of_a_secret_it_read(monkeypatch):
    """The output filter in front of stdout and stderr (``redact.install``) masks every form of each
    secret ccs read in this process (the keyring's lookups remember them), shaped like a key or not."""
    unshaped = "plain words make my gateway pass 42"
    remember(SLASHED, unshaped)
    sink = io.StringIO()
    stream = redact.RedactingStream(sink)
    for form in (*forms_of(SLASHED).values(), *forms_of(unshaped).values()):
        stream.write(f"error: the provider said {form!r}\n")
    stream.flush()
    assert_no_form(sink.getvalue(), SLASHED, unshaped)
    assert sink.getvalue().count("error: the provider said") == len(forms_of(SLASHED)) + len(forms_of(unshaped))


def test_the_export_search_finds_every_form_across_any_cut_and_names_it():
    """``ccs runs export``'s search uses the same forms: each found whole or cut anywhere into two
    pieces, named with its secret's description and its kind; a short secret is not looked for."""
    import base64
    import json as _json
    from urllib.parse import quote

    from ccswitch_tui.policy.secret_search import SecretSearch

    key = "bce-v3/ALTAK-Rt2+Ab/9xQ=="
    cases = {
        "as is": key,
        "URL- or JSON-encoded": quote(key, safe=""),
        "in another case": key.upper(),
        "base64": base64.b64encode(b"user:" + key.encode()).decode(),
    }
    cases_json = _json.dumps(key).replace("/", "\\/")[1:-1]
    for kind, form in [*cases.items(), ("URL- or JSON-encoded", cases_json)]:
        data = f"upstream said: {form} (end)".encode()
        for cut in range(len(data) + 1):
            search = SecretSearch([("the key", key), ("a short one", "abc")])
            found = search.feed(data[:cut]) or search.feed(data[cut:])
            assert found is not None and (found.what, found.form) == ("the key", kind), (kind, cut, found)
    plain = SecretSearch([("the key", key), ("a short one", "abc")])
    assert plain.feed(b"abc abc nothing of the key here, ALTAK alone") is None
