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
  agent model can still do that; ``LAYERS`` declares every layer.
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

from pathlib import Path

from ccswitch_tui.tools.capabilities import TuiFace
from ccswitch_tui.tools.layers import (
    WARN,
    Layer,
    Package,
    content_var,
    file_var,
    folder,
    home,
    project,
    system,
)
from ccswitch_tui.tools.opencode_family import AGENT_KEYS, CONFIG_KEYS, OpenCodeFamilySpec

KEY_VAR = "CCS_KILO_API_KEY"
QUIET_ENV = {"KILO_DISABLE_MODELS_FETCH": "1", "KILO_TELEMETRY_LEVEL": "off", "KILO_DISABLE_AUTOUPDATE": "1",
             "KILO_DISABLE_SHARE": "1"}
MANAGED_DIR = Path("/etc/kilo")
MANAGED_ENV = "CCS_KILO_MANAGED_DIR"  # where to look for the managed layer instead (tests)
# each folder's files, highest first
FILES = ("opencode.json", "opencode.jsonc", "kilo.json", "kilo.jsonc")
_KEYS = CONFIG_KEYS + AGENT_KEYS
_PROJECT = "the launch sets KILO_DISABLE_PROJECT_CONFIG=1"
_OFF = ("KILO_DISABLE_PROJECT_CONFIG", ("1", "true"))
_AGENT = "an agent's model beats the top-level model (a launch then fails on a provider ccs did not enable)"
LAYERS = (
    Layer("managed", "managed", "jsonc", system(*(f"{MANAGED_DIR}/{n}" for n in FILES), test_var=MANAGED_ENV), _KEYS,
          why="beats every other layer, ccs's own included"),
    Layer("content", "variable", "jsonc", content_var("KILO_CONFIG_CONTENT"), _KEYS,
          why="the launch's environment has it only when the profile sets it"),
    Layer("dir", "ccs", "jsonc", folder("KILO_CONFIG_DIR", *FILES), _KEYS,
          why="a launch's KILO_CONFIG_DIR is the profile's own"),
    Layer("home", "user", "jsonc", home(*(f"{d}/{n}" for d in (".kilo", ".kilocode") for n in FILES)), _KEYS,
          unbeaten=WARN, why=_AGENT),
    # measured: of the .kilo/.kilocode dirs the one nearer the git root wins, of the files the nearer
    Layer("project-dir", "project", "jsonc",
          project(*(f"{d}/{n}" for d in (".kilo", ".kilocode") for n in FILES), root_first=True), _KEYS,
          off_when=_OFF, why=_PROJECT),
    # measured: a project's opencode.json[c] (nearer folder first) beats its kilo.json[c]
    Layer("project-opencode", "project", "jsonc", project("opencode.jsonc", "opencode.json"), _KEYS, off_when=_OFF,
          why=_PROJECT),
    Layer("project", "project", "jsonc", project("kilo.jsonc", "kilo.json"), _KEYS, off_when=_OFF, why=_PROJECT),
    Layer("env", "variable", "jsonc", file_var("KILO_CONFIG"), _KEYS,
          why="the launch's environment has it only when the profile sets it"),
    Layer("global", "user", "jsonc", folder("XDG_CONFIG_HOME", *(f"kilo/{n}" for n in (
        "opencode.jsonc", "opencode.json", "kilo.jsonc", "kilo.json", "config.json")), default="~/.config"), _KEYS,
          unbeaten=WARN, why=_AGENT),
)


class KiloSpec(OpenCodeFamilySpec, TuiFace):
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
    layers = LAYERS
    # its Linux binary is the optional dependency @kilocode/cli-linux-x64 of the same version; 7.8.1 names a
    # binary package the registry does not have (npm then installs it without a binary)
    package = Package("npm", "@kilocode/cli", "7.7.7", broken_hint=(
        "its binary package @kilocode/cli-linux-x64@7.7.7 (or the one for this platform) was not installed; check "
        "`npm view @kilocode/cli-linux-x64@7.7.7`"))
    official_hosts = frozenset({"api.kilo.ai"})
    key_var = KEY_VAR
    config_file = "kilo.json"
    config_dir_var = "KILO_CONFIG_DIR"
    disable_project_var = "KILO_DISABLE_PROJECT_CONFIG"
    schema_url = "https://app.kilo.ai/config.json"
    quiet_env = QUIET_ENV


TOOL = KiloSpec()
