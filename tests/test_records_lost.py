"""A record that cannot be written is never lost silently: with the state folder on a 64 KiB
filesystem (a real tmpfs, mounted for the test), a recorded run of 300 requests says so on stderr at
the time, its manifest counts the records lost, the records file holds no half line, and `ccs runs`,
`ccs runs report` and `ccs usage` mark the run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import skip_or_fail
from provider_stub import ProviderStub

REQUESTS = 300

CHILD = textwrap.dedent(f'''
    import http.client, json, os
    from urllib.parse import urlsplit
    base = urlsplit(os.environ["OPENAI_BASE_URL"])
    conn = http.client.HTTPConnection(base.hostname, base.port, timeout=30)
    answered = 0
    for i in range({REQUESTS}):
        conn.request("POST", base.path + "/chat/completions",
                     body=json.dumps({{"model": "m", "messages": [{{"role": "user", "content": f"question {{i}}"}}]}}),
                     headers={{"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
                              "Content-Type": "application/json"}})
        r = conn.getresponse()
        r.read()
        answered += r.status == 200
    print(answered)
''')


@pytest.fixture
def small_state(ccs_home):
    """``$CCS_HOME/state`` on a tmpfs of 64 KiB."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        skip_or_fail("needs root to mount a small tmpfs for the state folder")
    state = Path(os.environ["CCS_HOME"]) / "state"
    state.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(state)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        skip_or_fail(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    yield state
    subprocess.run(["umount", "-l", str(state)], check=False)


def test_a_full_disk_loses_no_record_silently(ccs, base_env, tmp_path, small_state):
    provider = ProviderStub()
    try:
        profiles = Path(os.environ["CCS_HOME"]) / "profiles"
        profiles.mkdir(parents=True, exist_ok=True)
        (profiles / "p.toml").write_text(f'schema = 1\n[provider]\nname = "P"\nbase_url = "{provider.url}/v1"\n'
                                         'key = "env:LOST_KEY"\n[run]\nexport = ["openai"]\nmodel = "m"\n')
        program = tmp_path / "child.py"
        program.write_text(CHILD)
        env = {**base_env, "LOST_KEY": "lost-key-0123456789abcdef"}
        r = ccs("run", "--record", "--label", "full", "p", "--", sys.executable, str(program), env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == str(REQUESTS)  # every request was answered
        assert len(provider.posts()) == REQUESTS
    finally:
        provider.close()
    warnings = [line for line in r.stderr.splitlines() if "could not be written" in line]
    assert warnings and warnings[0].startswith("ccs: warning: a request record could not be written to ")
    assert "No space left on device" in warnings[0]

    (manifest_file,) = small_state.joinpath("runs").glob("*.json")
    manifest = json.loads(manifest_file.read_text())
    raw = (small_state / "runs" / manifest["recording"]["records"]).read_bytes()
    lines = raw.split(b"\n")
    assert lines[-1] == b""  # the file ends with a whole line
    records = [json.loads(line) for line in lines[:-1]]  # and every line is whole JSON
    lost = manifest["requests"]["records_lost"]
    assert 0 < len(records) < REQUESTS and len(records) + lost == REQUESTS
    assert manifest["requests"]["requests"] == len(records)

    listed = ccs("runs", env=env)
    assert f"0 ({lost} records lost)" in listed.stdout, listed.stdout
    report = ccs("runs", "report", "--label", "full", env=env)
    assert f"{len(records)} (+{lost} lost)" in report.stdout, report.stdout
    assert f"{lost} request record(s) could not be written" in report.stderr
    usage = ccs("usage", env=env)
    assert f"note: run {manifest['launch_id']}: {lost} request record(s) could not be written" in usage.stdout + \
        usage.stderr, usage.stdout + usage.stderr
