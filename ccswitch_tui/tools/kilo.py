"""Kilo Code CLI (`@kilocode/cli`, the ``kilo`` command): a fork of OpenCode, launched like it
(tools/opencode_family.py): a per-profile config dir holding one ``kilo.json`` provider entry (Chat
Completions through the bundled ``@ai-sdk/openai-compatible``), the key only in the child's
environment, referenced as ``{env:CCS_KILO_API_KEY}``.

Measured with @kilocode/cli 7.7.7 (binary from @kilocode/cli-linux-x64 7.7.7) against a loopback stub:
- ``kilo run "…"`` sends one ``POST {baseURL}/chat/completions`` with ``Authorization: Bearer <the env
  value>`` and the model named under ``models`` (no title request in one-prompt mode), with
  ``HTTP-Referer: https://kilocode.ai``, ``X-Title: Kilo Code`` and the session id (``x-session-id``,
  ``x-session-affinity``). A provider id that is one of Kilo's built-in providers (``openai``,
  ``openrouter``, ``kilo``) still went to the configured ``baseURL`` as Chat Completions. The npm
  ``kilo`` is a Node launcher that runs the native binary ``@kilocode/cli/bin/.kilo`` (its environment
  gains ``KILO_TREE_SITTER_WASM_DIR``; ``KILO_BIN_PATH`` would make it run another binary).
- It reads ``KILO_*`` variables, not ``OPENCODE_*`` ones. Its configuration layers (``kilo debug
  config``; each key merged separately), highest first: the managed dir ``/etc/kilo/`` (its
  ``kilo.jsonc``, ``kilo.json``, ``opencode.jsonc``, ``opencode.json``; beats ccs's file too), then
  ``KILO_CONFIG_CONTENT``, ``KILO_CONFIG_DIR``'s files, ``~/.kilo/`` and ``~/.kilocode/``, the project's
  ``.kilo/`` and ``.kilocode/`` dirs in each folder from the working directory up to the git root (the
  one nearer the root wins), the project's ``opencode.json[c]`` then ``kilo.json[c]`` files (same walk;
  there the nearer wins), ``KILO_CONFIG`` (a file), and the global ``$XDG_CONFIG_HOME/kilo/``
  (``opencode.json[c]``, ``kilo.json[c]``, ``config.json``). A project's ``.opencode/`` is not read.
  ccs's file sits in ``KILO_CONFIG_DIR``; ``KILO_DISABLE_PROJECT_CONFIG=1`` drops the project's files
  and dirs: without it a project's ``agent.code.model`` (an agent's model beats the top-level
  ``model``) took over a launch (ccs's ``enabled_providers`` made it fail rather than reach the
  project's provider). A global or ``~/.kilo``
  agent model can still do that; ``doctor`` reads every layer (``kilo_layers``).
- Sessions, the database, logs and a ``telemetry-id`` live in ``$XDG_DATA_HOME/kilo``: each profile
  gets its own (``XDG_CONFIG_HOME``/``XDG_STATE_HOME`` stay the user's, which a nested ccs needs; Kilo
  writes a ``.gitignore`` and a migration marker into ``~/.config/kilo``).
- Sessions are rows of the ``session`` table of ``$XDG_DATA_HOME/kilo/kilo.db`` (SQLite: ``id`` like
  ``ses_…``, ``directory``, ``parent_id`` for a sub-agent's, ``time_updated`` in ms); ``kilo --session
  ID`` resumes one (the resume hint after an interactive launch).
- Besides the provider it contacts models.dev (stopped by ``KILO_DISABLE_MODELS_FETCH=1``), PostHog at
  us.i.posthog.com (stopped by ``KILO_TELEMETRY_LEVEL=off``) and, interactive in a fresh home, the npm
  registry for its update check (stopped by ``KILO_DISABLE_AUTOUPDATE=1``). It installed no plugin.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ccswitch_tui.tools.opencode_family import (
    OpenCodeFamilySpec,
    disabled,
    home_of,
    project_dirs,
    xdg_config,
)

KEY_VAR = "CCS_KILO_API_KEY"
QUIET_ENV = {"KILO_DISABLE_MODELS_FETCH": "1", "KILO_TELEMETRY_LEVEL": "off", "KILO_DISABLE_AUTOUPDATE": "1",
             "KILO_DISABLE_SHARE": "1"}
MANAGED_DIR = Path("/etc/kilo")
MANAGED_ENV = "CCS_KILO_MANAGED_DIR"  # where to look for the managed layer instead (tests)
# each folder's files, lowest first (a later one beats an earlier one)
DIR_FILES = ("kilo.jsonc", "kilo.json", "opencode.jsonc", "opencode.json")


class KiloSpec(OpenCodeFamilySpec):
    name = "kilo"
    label = "Kilo Code"
    short = "Kilo"
    program = "kilo"
    install_hint = "install it with `npm install -g @kilocode/cli`"
    tui_key = "b"
    families = {"kilo": r"KILO_.*|KILOCODE_.*|CCS_KILO_API_KEY"}
    family_effects = {"kilo": "Kilo Code"}
    reads = ("kilo",)
    exe_names = ("kilo", ".kilo", "kilocode", "kilo.exe")
    scripts = ("@kilocode/cli/bin/kilo",)
    internal_vars = frozenset({"KILO_TREE_SITTER_WASM_DIR"})  # its npm launcher sets it for the binary
    loaders = frozenset({"KILO_BIN_PATH"})  # its npm launcher runs the binary this names instead of its own
    key_var = KEY_VAR
    config_file = "kilo.json"
    config_dir_var = "KILO_CONFIG_DIR"
    disable_project_var = "KILO_DISABLE_PROJECT_CONFIG"
    schema_url = "https://app.kilo.ai/config.json"
    quiet_env = QUIET_ENV
    agent_models = True
    project_files = "kilo.json[c], opencode.json[c], .kilo/ or .kilocode/"

    def managed_layers(self, environ: Mapping[str, str]) -> list[Path]:
        folder = Path(environ[MANAGED_ENV]) if environ.get(MANAGED_ENV) else MANAGED_DIR
        return [folder / n for n in reversed(DIR_FILES)]

    def config_layers(self, cwd: Path, environ: Mapping[str, str]) -> list[tuple[str, Path]]:
        """Every Kilo Code configuration file that applies to ``cwd`` from this shell, highest
        precedence first (KILO_CONFIG_CONTENT, a value, is the shell's to report)."""
        files = tuple(reversed(DIR_FILES))
        out: list[tuple[str, Path]] = [("managed", p) for p in self.managed_layers(environ)]
        if environ.get("KILO_CONFIG_DIR"):
            out += [("dir", Path(environ["KILO_CONFIG_DIR"]) / n) for n in files]
        home = home_of(environ)
        out += [("home", home / d / n) for d in (".kilo", ".kilocode") for n in files]
        if not disabled(environ, "KILO_DISABLE_PROJECT_CONFIG"):
            folders = [f for f in project_dirs(cwd) if f != home]  # ~/.kilo is the home layer
            # measured: of the .kilo/.kilocode dirs the one nearer the git root wins, of the files the nearer
            out += [("project", f / d / n) for f in reversed(folders) for d in (".kilo", ".kilocode") for n in files]
            out += [("project", f / n) for stem in ("opencode", "kilo") for f in folders
                    for n in (f"{stem}.jsonc", f"{stem}.json")]
        if environ.get("KILO_CONFIG"):
            out.append(("env", Path(environ["KILO_CONFIG"])))
        out += [("global", xdg_config(environ) / "kilo" / n)
                for n in ("opencode.jsonc", "opencode.json", "kilo.jsonc", "kilo.json", "config.json")]
        return out


TOOL = KiloSpec()
