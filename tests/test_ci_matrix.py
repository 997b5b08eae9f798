"""The CI workflow of docs/reruns.md ("Reruns in CI"), played as written: each job's `run:` scripts run under bash
in a state folder of its own (one machine per job), with the key and the shared salt as the CI secrets
in the environment (`key = "env:GW_KEY"`, no keyring: no session bus at all), artifacts handed from job
to job as the workflow's upload and download steps say, against a loopback provider. The report job's
summary holds the round's table: five reruns from five machines, one fingerprint, clean. A rerun whose
key was rotated fails its job with exit 3 before its agent runs."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from provider_stub import ProviderStub
from test_rounds import example_agent

ROOT = Path(__file__).resolve().parent.parent
SECRETS = {"GW_KEY": "sk-ci-secret-0123456789abcdef0123", "CCS_FINGERPRINT_SALT": "9d1c3f5e7a2b4d6f8e0a1c3e5b7d9f2a"}


def workflow() -> str:
    text = (ROOT / "docs" / "reruns.md").read_text()
    match = re.search(r"### Reruns in CI\n.*?```yaml\n(.*?)```", text, re.S)
    assert match, "docs/reruns.md has no CI workflow under 'Reruns in CI'"
    return match.group(1)


def jobs(yaml: str) -> dict[str, str]:
    """Each job's text, by name."""
    body = yaml.split("\njobs:\n", 1)[1]
    parts = re.split(r"(?m)^  ([a-z][\w-]*):\s*$", body)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def top_env(yaml: str) -> dict[str, str]:
    head = yaml.split("\nenv:\n", 1)[1].split("\njobs:\n", 1)[0]
    return {m[1]: m[2] for m in re.finditer(r"(?m)^  (\w+): (.+?)(?:\s{2,}#.*)?$", head)}


def scripts(job: str) -> list[str]:
    """The job's multi-line `run: |` blocks (one-line steps install ccs, which the test has)."""
    out = []
    for m in re.finditer(r"(?m)^      - run: \|\n((?:          .*\n)+)", job):
        out.append("".join(line[10:] + "\n" for line in m.group(1).splitlines()))
    return out


def expand(text: str, values: dict[str, str]) -> str:
    def one(m: re.Match[str]) -> str:
        return values[m.group(1)]
    return re.sub(r"\$\{\{\s*([\w.]+)\s*\}\}", one, text)


def play(job_text: str, work: Path, env: dict[str, str], values: dict[str, str]) -> subprocess.CompletedProcess:
    machine = re.search(r'(?m)env: \{ CCS_MACHINE: "?(.+?)"? \}$', job_text)
    env = {**env, "CCS_HOME": str(work / "ccs-state")}
    if machine:
        env["CCS_MACHINE"] = expand(machine.group(1), values)
    script = "\n".join(expand(s, values) for s in scripts(job_text))
    assert "ccs " in script
    return subprocess.run(["bash", "-e", "-c", script], cwd=work, env=env, capture_output=True, text=True,
                          timeout=300)


def test_the_ci_workflow(tmp_path, base_env):
    yaml = workflow()
    assert "key env:GW_KEY" in yaml and "--same-as" in yaml and "--locked" in yaml
    found = jobs(yaml)
    assert list(found) == ["first", "reruns", "report"]
    seeds = re.search(r"seed: \[([^\]]+)\]", found["reruns"]).group(1).split(", ")
    assert len(seeds) >= 2
    stub = ProviderStub()
    try:
        # The runner: ccs and the agent's interpreter on PATH, no D-Bus session (no keyring), the secrets.
        env = {k: v for k, v in base_env.items() if k not in ("DBUS_SESSION_BUS_ADDRESS", "CCS_HOME")}
        env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
        for name, value in top_env(yaml).items():
            secret = re.fullmatch(r"\$\{\{ secrets\.(\w+) \}\}", value)
            env[name] = SECRETS[secret.group(1)] if secret else value
        env["GW_BASE_URL"] = stub.url + "/v1"  # the provider: a loopback one
        assert set(SECRETS) <= set(env)

        def job(name: str, folder: str, values: dict[str, str] | None = None) -> Path:
            work = tmp_path / folder
            work.mkdir()
            (work / "agent.py").write_text(example_agent())  # actions/checkout
            r = play(found[name], work, env, values or {})
            assert r.returncode == 0, r.stdout + r.stderr
            assert "Traceback" not in r.stderr and SECRETS["GW_KEY"] not in r.stdout + r.stderr
            return work

        first = job("first", "first")
        assert "with: { name: runs-first, path: first.tar.gz }" in found["first"]
        for seed in seeds:
            work = tmp_path / f"seed-{seed}"
            work.mkdir()
            shutil.copy(first / "first.tar.gz", work)  # download-artifact runs-first
            (work / "agent.py").write_text(example_agent())
            r = play(found["reruns"], work, env, {"matrix.seed": seed})
            assert r.returncode == 0, r.stdout + r.stderr
        report = tmp_path / "report"
        (report / "runs").mkdir(parents=True)
        for archive in [first / "first.tar.gz", *(tmp_path / f"seed-{s}" / f"seed-{s}.tar.gz" for s in seeds)]:
            shutil.copy(archive, report / "runs")  # download-artifact pattern: runs-*, merge-multiple
        summary = report / "summary.md"
        r = play(found["report"], report, {**env, "GITHUB_STEP_SUMMARY": str(summary)}, {})
        assert r.returncode == 0, r.stdout + r.stderr
        table = summary.read_text().splitlines()
        head, row = table[0].strip("| ").split(" | "), table[2].strip("| ").split(" | ")
        assert head[:2] == ["ROUND", "K"] and "MACHINES" in head and len(head) == len(row)
        assert row[0] == env["ROUND"] and row[1] == str(len(seeds) + 1)
        assert row[head.index("MACHINES")] == " ".join(sorted(["first", *(f"seed-{s}" for s in seeds)]))
        assert row[-1] == "clean: the gap is the agent's", table[2]
        assert re.search(r"\| fixed: fp:[0-9a-f]{12} \|", table[2])
        assert len(stub.posts()) == 8 * (len(seeds) + 1)

        # A rerun job whose key was rotated: refused before its agent runs, the job fails.
        work = tmp_path / "rotated"
        work.mkdir()
        shutil.copy(first / "first.tar.gz", work)
        (work / "agent.py").write_text(example_agent())
        r = play(found["reruns"], work, {**env, "GW_KEY": "sk-ci-rotated-0123456789abcdef01"}, {"matrix.seed": "9"})
        assert r.returncode == 3, r.stdout + r.stderr
        assert "refusing to start" in r.stderr and "key_fingerprint" in r.stderr
        assert len(stub.posts()) == 8 * (len(seeds) + 1) and not (work / "seed-9.tar.gz").exists()
    finally:
        stub.close()
