"""Credentials inside URLs: refused in profiles with one line saying where keys belong, and masked
in everything ccs reports about other sources (the shell, running processes, settings layers,
redirects, manifests), text and JSON alike."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from key_samples import GLM, MOONSHOT
from leakcheck import BASIC, assert_hidden, assert_one_line, nothing_on_disk_holds, write_profile

PW = "hunter2pass"  # a password is not key-shaped: only its place in the URL gives it away
BAD_URLS = {
    "user:password": (f"https://alice:{PW}@gw.example/v1", PW),
    "user:key": (f"https://alice:{MOONSHOT}@gw.example/v1", MOONSHOT),
    "token as user": (f"https://{GLM}@gw.example/v1", GLM),
    "short token as user": (f"https://{PW}@gw.example/v1", PW),
    "?key=": (f"https://gw.example/v1?key={MOONSHOT}", MOONSHOT),
    "?api_key=": (f"https://gw.example/v1?api_key={PW}", PW),
    "?access_token=": (f"https://gw.example/v1?model=m&access_token={PW}", PW),
    "?token= key-shaped under any name": (f"https://gw.example/v1?x={GLM}", GLM),
    "key in the path": (f"https://gw.example/{GLM}/v1", GLM),
}


@pytest.mark.parametrize("case", sorted(BAD_URLS))
def test_new_refuses_credentials_in_the_base_url(ccs, ccs_home, case):
    url, secret = BAD_URLS[case]
    r = ccs("new", "p", "--base-url", url)
    line = assert_one_line(r, 2)
    assert "keyring" in line and ("URL" in line or "looks like a key" in line)
    assert_hidden(r, secret)
    assert not (ccs_home.profiles / "p.toml").exists()


FIELDS = {
    "[provider].base_url": BASIC,
    "[provider].website": BASIC.replace('key = "{key}"', 'key = "{key}"\nwebsite = "{bad}"'),
    "[claude].base_url": BASIC + '[claude]\nbase_url = "{bad}"\n',
    "[env].HTTPS_PROXY": BASIC + '[env]\nHTTPS_PROXY = "{bad}"\n',
    "[claude.env].ANTHROPIC_CUSTOM_URL": BASIC + '[claude]\n[claude.env]\nANTHROPIC_CUSTOM_URL = "{bad}"\n',
}


@pytest.mark.parametrize("field", sorted(FIELDS))
@pytest.mark.parametrize("case", ["user:password", "?api_key=", "token as user"])
def test_profile_files_with_credentials_in_urls_are_refused(ccs, ccs_home, field, case):
    bad, secret = BAD_URLS[case]
    url = bad if field == "[provider].base_url" else "https://ok.example/v1"
    body = FIELDS[field].format(url=url, key="env:PKEY", bad=bad)
    write_profile(ccs_home.profiles, "p", body)
    r = ccs("show", "p")
    line = assert_one_line(r, 2, says=field)
    assert "keyring" in line
    assert_hidden(r, secret)
    r = ccs("list", "--json")
    assert_hidden(r, secret)
    assert json.loads(r.stdout)["profiles"][0]["ok"] is False


# --- other sources: masked when reported ---------------------------------------------------------

SHELL = {
    "HTTPS_PROXY": f"http://bob:{PW}@proxy.local:3128",
    "ANTHROPIC_BASE_URL": f"https://gw.example/anthropic?api_key={PW}",
    "OPENAI_BASE_URL": f"https://{GLM}@gw.example/v1",
    "ANTHROPIC_CUSTOM_HEADERS": f"x-api-key: {PW}\nAuthorization: Bearer {MOONSHOT}",
}
SECRETS = (PW, GLM, MOONSHOT)


@pytest.fixture
def prof(ccs_home):
    write_profile(ccs_home.profiles, "p", BASIC.format(url="http://127.0.0.1:9/v1", key="env:PKEY"))
    return ccs_home


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PKEY": "sk-profile-key-0000000000000000", **extra}


@pytest.mark.parametrize("args", [("doctor",), ("doctor", "--json"), ("env", "p", "--diff"),
                                  ("env", "p", "--diff", "--format", "json")])
def test_shell_credentials_are_masked_in_doctor_and_env_diff(ccs, prof, tmp_path, args):
    r = ccs(*args, env=_env(**SHELL), cwd=tmp_path)
    assert_hidden(r, *SECRETS)
    assert "proxy.local" in r.stdout  # the rest of the value is still shown
    if "json" in args or "--json" in args:
        json.loads(r.stdout)


def test_settings_layer_credentials_are_masked_in_doctor(ccs, prof, tmp_path):
    proj = tmp_path / "repo"
    (proj / ".claude").mkdir(parents=True)
    (proj / ".claude" / "settings.json").write_text(json.dumps({"env": {
        "ANTHROPIC_BASE_URL": f"https://u:{PW}@gw.example", "ANTHROPIC_AUTH_TOKEN": GLM}}))
    for args in (("doctor", "--cwd", str(proj)), ("doctor", "--cwd", str(proj), "--json")):
        r = ccs(*args, env=_env())
        assert r.returncode == 3, r.stderr
        assert "gw.example" in r.stdout
        assert_hidden(r, *SECRETS)


def test_inspect_and_ps_mask_a_processes_url_credentials(ccs, prof, tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                             env={"PATH": os.environ["PATH"], **SHELL, "ANTHROPIC_AUTH_TOKEN": MOONSHOT})
    try:
        # inspect: the routing variables of no launch are errors (3); ps only lists (0)
        for args, code in ((("inspect", str(child.pid)), 3), (("inspect", str(child.pid), "--json"), 3),
                           (("inspect", str(child.pid), "--profile", "p", "--json"), 3),
                           (("ps", "--all", "--json"), 0)):
            r = ccs(*args, env=_env())
            assert r.returncode == code, r.stderr
            assert_hidden(r, *SECRETS)
    finally:
        child.kill()
        child.wait()


class _Redirect(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _go(self):
        self.send_response(302)
        self.send_header("location", f"https://elsewhere.invalid/cb?token={PW}&next={GLM}")
        self.send_header("content-length", "0")
        self.end_headers()

    do_GET = do_POST = _go


def test_check_masks_a_redirect_location_holding_a_token(ccs, ccs_home):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Redirect)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
        write_profile(ccs_home.profiles, "p", BASIC.format(url=url, key="env:PKEY"))
        for args in (("check", "p"), ("check", "p", "--json")):
            r = ccs(*args, env=_env())
            assert r.returncode == 3, r.stderr
            assert "elsewhere.invalid" in r.stdout
            assert_hidden(r, PW, GLM)
    finally:
        srv.shutdown()
        srv.server_close()


def test_manifests_and_runs_keep_no_credential_from_argv(ccs, prof):
    url = f"https://bob:{PW}@gw.example/x?api_key={PW}&k={GLM}"
    r = ccs("run", "p", "--", "true", url, env=_env())
    assert r.returncode == 0, r.stderr
    nothing_on_disk_holds(prof.state, PW, GLM)
    for args in (("runs",), ("runs", "--json")):
        r = ccs(*args, env=_env())
        assert r.returncode == 0 and "gw.example" in r.stdout
        assert_hidden(r, PW, GLM)
