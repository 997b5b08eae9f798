"""OpenCode (`opencode-ai`): a per-profile config dir holding one ``opencode.json`` provider entry
(Chat Completions through the bundled ``@ai-sdk/openai-compatible``), the key only in the child's
environment, referenced as ``{env:CCS_OPENCODE_API_KEY}``.

Measured with opencode 1.18.33 against a loopback stub:
- Requests go to ``POST {baseURL}/chat/completions`` with ``Authorization: Bearer <the env value>``
  and the model named under ``models``; a title request uses ``small_model`` (else the same model).
- Config precedence, later wins: the user's global config, ``OPENCODE_CONFIG``, the project's
  ``opencode.json``/``.opencode/``, ``OPENCODE_CONFIG_DIR``, ``OPENCODE_CONFIG_CONTENT``. ccs's file
  sits in ``OPENCODE_CONFIG_DIR`` (beats the project), and ``OPENCODE_DISABLE_PROJECT_CONFIG=1``
  keeps a project file from adding providers or a ``small_model`` that goes elsewhere.
- Its configuration layers, measured with ``opencode debug config`` (each key merged separately): the
  global ``$XDG_CONFIG_HOME/opencode/`` (``~/.config/opencode/``) ``config.json``, ``opencode.json``,
  ``opencode.jsonc`` (comments allowed); then ``OPENCODE_CONFIG`` (a file); then the project's
  ``opencode.json[c]`` and ``.opencode/opencode.json[c]`` in every directory from the working one up to
  the git root (up to ``/`` outside a repository; the nearer wins; ``OPENCODE_DISABLE_PROJECT_CONFIG=1``
  drops them all); then ``OPENCODE_CONFIG_DIR``'s files; then ``OPENCODE_CONFIG_CONTENT``. ``LAYERS``
  declares them.
- Sessions, the database and ``auth.json`` live in ``$XDG_DATA_HOME/opencode``: each profile gets
  its own (``XDG_CONFIG_HOME``/``XDG_STATE_HOME`` stay the user's, which a nested ccs needs).
- Besides the provider it fetches models.opencode.ai (stopped by ``OPENCODE_DISABLE_MODELS_FETCH``)
  and, on the first use of a config dir, installs ``@opencode-ai/plugin`` from the npm registry
  (nothing stops that; a failure is only a warning in its log).
"""

from __future__ import annotations

from ccswitch_tui.tools.capabilities import TuiFace
from ccswitch_tui.tools.layers import (
    WARN,
    Layer,
    Package,
    content_var,
    file_var,
    folder,
    project,
    system,
)
from ccswitch_tui.tools.opencode_family import CONFIG_KEYS, FamilySide, OpenCodeFamilySpec

KEY_VAR = "CCS_OPENCODE_API_KEY"
QUIET_ENV = {"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_SHARE": "1"}
OpenCodeSide = FamilySide  # the [opencode] table (tools/opencode_family.py declares it for the family)
CONFIG_NAMES = ("opencode.jsonc", "opencode.json")  # read in each project directory and .opencode/
_PROJECT = "the launch sets OPENCODE_DISABLE_PROJECT_CONFIG=1"
MANAGED_ENV = "CCS_OPENCODE_MANAGED_DIR"  # where to look for the managed layer instead (tests)
LAYERS = (
    # read in 1.18.33's bundled source after OPENCODE_CONFIG_CONTENT: beats every other layer, ccs's too
    Layer("managed", "managed", "jsonc", system(*(f"/etc/opencode/{n}" for n in CONFIG_NAMES), test_var=MANAGED_ENV),
          CONFIG_KEYS, why="beats every other layer, ccs's own included"),
    Layer("content", "variable", "jsonc", content_var("OPENCODE_CONFIG_CONTENT"), CONFIG_KEYS,
          why="beats every file; the launch's environment has it only when the profile sets it"),
    Layer("dir", "ccs", "jsonc", folder("OPENCODE_CONFIG_DIR", *CONFIG_NAMES), CONFIG_KEYS,
          why="a launch's OPENCODE_CONFIG_DIR is the profile's own: beats the project, OPENCODE_CONFIG and global"),
    Layer("project", "project", "jsonc", project(*(f".opencode/{n}" for n in CONFIG_NAMES), *CONFIG_NAMES), CONFIG_KEYS,
          off_when=("OPENCODE_DISABLE_PROJECT_CONFIG", ("1", "true")), why=_PROJECT),
    Layer("env", "variable", "jsonc", file_var("OPENCODE_CONFIG"), CONFIG_KEYS,
          why="the launch's environment has it only when the profile sets it"),
    Layer("global", "user", "jsonc",
          folder("XDG_CONFIG_HOME", *(f"opencode/{n}" for n in (*CONFIG_NAMES, "config.json")), default="~/.config"),
          CONFIG_KEYS, unbeaten=WARN,
          why="every OpenCode reads it, ccs launches included"),
)


class OpenCodeSpec(OpenCodeFamilySpec, TuiFace):
    name = "opencode"
    label = "OpenCode"
    short = "OpenCode"
    program = "opencode"
    install_hint = "install it with `npm install -g opencode-ai`"
    tui_key = "o"
    families = {"opencode": r"OPENCODE_.*|CCS_OPENCODE_API_KEY"}
    family_effects = {"opencode": "OpenCode"}
    reads = ("opencode",)
    exe_names = ("opencode", "opencode.exe")
    scripts = ("opencode-ai/bin/opencode",)
    layers = LAYERS
    package = Package("npm", "opencode-ai", "1.18.33")
    official_hosts = frozenset({"opencode.ai"})
    key_var = KEY_VAR
    config_file = "opencode.json"
    config_dir_var = "OPENCODE_CONFIG_DIR"
    disable_project_var = "OPENCODE_DISABLE_PROJECT_CONFIG"
    schema_url = "https://opencode.ai/config.json"
    quiet_env = QUIET_ENV


TOOL = OpenCodeSpec()
