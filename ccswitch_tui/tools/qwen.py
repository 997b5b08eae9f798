"""Qwen Code (`@qwen-code/qwen-code`, a Gemini CLI fork): a per-profile QWEN_HOME, a system layer of
ccs's own (the machine's, with the OpenAI-compatible auth type, the model and its provider entry on
top) that beats a project's settings, and the key only in the child's environment (``OPENAI_API_KEY``).

Measured with qwen-code 0.24.4 against a loopback stub, in a private network namespace:
- ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and ``OPENAI_MODEL`` route it with no settings at all:
  ``POST {base}/chat/completions`` (streamed), ``Authorization: Bearer <key>``. A ``-p`` turn makes
  two requests: the answer, then a memory extraction (``memory.enableManagedAutoMemory = false``
  stops the second). ``QWEN_DEFAULT_AUTH_TYPE`` and ``QWEN_CODE_MODEL`` change nothing headless.
- ``QWEN_HOME`` relocates everything it keeps (settings, sessions under
  ``projects/<cwd>/chats/<uuid>.jsonl``, memories, usage logs); nothing is written to ``$HOME``.
- Settings layers, later wins, each key merged separately: system defaults
  (``/etc/qwen-code/system-defaults.json``), the user layer (``$QWEN_HOME/settings.json``, default
  ``~/.qwen/settings.json``), the project's ``.qwen/settings.json`` (only in a trusted folder), the
  system layer (``/etc/qwen-code/settings.json``; ``QWEN_CODE_SYSTEM_SETTINGS_PATH`` and
  ``QWEN_CODE_SYSTEM_DEFAULTS_PATH`` move them). Comments are allowed.
- What beats the environment: ``security.auth.selectedType`` (``anthropic`` sent the turn to
  ``ANTHROPIC_BASE_URL``), ``model.name`` (beats ``OPENAI_MODEL``), a ``modelProviders`` entry for the
  model (its ``baseUrl`` and ``envKey`` beat ``OPENAI_BASE_URL``/``OPENAI_API_KEY``, even from the
  system defaults, unless a later layer has its own), ``proxy``. ``security.auth.baseUrl``/``apiKey``
  do not beat the variables. A layer's ``env`` table fills in variables the environment lacks.
- Folder trust is off by default, so every folder is trusted: a project's settings and ``.env``
  apply. With ``security.folderTrust.enabled`` and no ``trustedFolders.json`` entry they do not, but
  then ``--yolo`` and every approval mode but ``default``/``plan`` are overridden to ``default``, and
  an interactive start asks "Do you trust this folder?". So ccs leaves the folder trusted and puts its
  keys in the system layer, which beats the project's; what that cannot override (a ``proxy``, an
  ``env`` table or ``.env`` that fills in a routing variable) refuses the launch, and ``--isolate``
  turns folder trust on instead. It rewrites a project's ``.qwen/settings.json`` to add ``"$version"``
  even when the folder is not trusted.
- ``.env`` files fill in variables the environment lacks (an empty one counts as lacking): the first
  of ``.qwen/.env`` or ``.env`` from the working folder up (trusted folders only), and always
  ``$QWEN_HOME/.env``, ``~/.qwen/.env`` and ``~/.env``, even with ``QWEN_HOME`` moved. A home
  ``.env`` can set ``QWEN_CODE_SYSTEM_SETTINGS_PATH`` (a system layer of its choice) or a proxy: ccs
  pins the system paths and refuses a launch that such a file would change.
- Besides the provider it contacts ``gb4w8c3ygj-default-sea.rum.aliyuncs.com`` (usage statistics,
  stopped by ``privacy.usageStatisticsEnabled = false``) and, interactive, ``registry.npmjs.org``
  (update check, stopped by ``general.enableAutoUpdate = false``). An update is installed into
  ``$QWEN_HOME/updates/npm`` and then runs instead of the installed package: ccs keeps it off always.
  Those hosts are Alibaba's and npm's whatever the endpoint, so a launch is quiet by default everywhere
  but on DashScope, Alibaba's own API (``[policy] quiet`` decides when set).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ccswitch_tui.model import (
    SOURCE_ROUTING,
    SOURCE_TOOL,
    ClientSetup,
    FileToWrite,
    LaunchPlan,
    Profile,
    new_launch_id,
)
from ccswitch_tui.paths import Paths
from ccswitch_tui.policy.families import Families
from ccswitch_tui.tools import fields
from ccswitch_tui.tools import gemini_family as family
from ccswitch_tui.tools.capabilities import Probing, Resuming, TuiFace
from ccswitch_tui.tools.environment import EnvBuilder
from ccswitch_tui.tools.fields import string, url
from ccswitch_tui.tools.layers import ISOLATE, Key, Layer, Package, folder, home, project, state, system, working
from ccswitch_tui.tools.quiet import quiet_for
from ccswitch_tui.tools.spec import ProbeSpec, ToolSpec, chat_probe, has_option, newest_session_id
from ccswitch_tui.valueclass import valueclass

KEY_VAR = "OPENAI_API_KEY"
SYSTEM_ENV = "CCS_QWEN_SYSTEM_SETTINGS"  # where to look for the system layer instead (tests)
SYSTEM_SETTINGS = Path("/etc/qwen-code/settings.json")
# … and those ccs removes from the profile's user layer (an interactive /auth may write them)
DROPPED_KEYS = ("security.auth.enforcedType", "security.auth.useExternal", "security.auth.baseUrl",
                "security.auth.apiKey", "proxy")
QUIET_SETTINGS = {"privacy": {"usageStatisticsEnabled": False}}
# the usage statistics host is Alibaba's: a launch is quiet by default everywhere but on DashScope
VENDOR_HOSTS = frozenset({"dashscope.aliyuncs.com", "dashscope-intl.aliyuncs.com", "dashscope-us.aliyuncs.com",
                          ".dashscope.aliyuncs.com"})
_SETTINGS_KEYS = (
    Key("security.auth.selectedType", "auth"), Key("security.auth.enforcedType", "auth"),
    Key("security.auth.useExternal", "auth"),
    # measured: the variables beat these two
    Key("security.auth.baseUrl", "base-url", beaten_by=("env:OPENAI_BASE_URL",)),
    Key("security.auth.apiKey", "key", beaten_by=("env:OPENAI_API_KEY",)),
    Key("model.name", "model"), Key("modelProviders", "provider"), Key("proxy", "proxy"),
    Key("env.*", "env", fills=True),  # fills in what the environment lacks
)
_ENV_KEYS = (Key("*", "env", fills=True),)
_UNTRUSTED = "--isolate turns folder trust on and leaves this folder untrusted"
LAYERS = (
    Layer("system", "system", "jsonc", system(str(SYSTEM_SETTINGS), test_var=SYSTEM_ENV), _SETTINGS_KEYS,
          why="ccs gives the launch its own system layer built on this one: the operator's routing would be "
              "replaced"),
    Layer("ccs-system", "ccs", "jsonc", state("system-settings.json"), _SETTINGS_KEYS,
          why="QWEN_CODE_SYSTEM_SETTINGS_PATH names it: beats the project and user layers"),
    Layer("project", "project", "jsonc", working(".qwen/settings.json"), _SETTINGS_KEYS, launch=ISOLATE,
          why=_UNTRUSTED),
    Layer("user", "ccs", "jsonc", folder("QWEN_HOME", "settings.json", default="~/.qwen"), _SETTINGS_KEYS,
          why="a launch's QWEN_HOME is the profile's own, its routing keys removed"),
    Layer("system-defaults", "system", "jsonc", system("/etc/qwen-code/system-defaults.json", test_var=SYSTEM_ENV,
                                                       sibling=True), _SETTINGS_KEYS, why="the lowest layer"),
    Layer("qwen-home-env", "user", "dotenv", folder("QWEN_HOME", ".env", default="~/.qwen"), _ENV_KEYS,
          why="read at every start, whatever the folder"),
    Layer("home-env", "user", "dotenv", home(".qwen/.env", ".env"), _ENV_KEYS,
          why="read at every start, whatever the folder, even with QWEN_HOME moved"),
    Layer("project-env", "project", "dotenv", project(".qwen/.env", ".env", first=True, stop="home"), _ENV_KEYS,
          launch=ISOLATE, why=_UNTRUSTED),
)


@valueclass(frozen=True, kw_only=True)
class QwenSide:
    """The [qwen] table, declared once (tools/fields.py)."""

    base_url: str = url(hint="default: the provider's; requests go to …/chat/completions")
    model: str = string("model", hint="required (OPENAI_MODEL), e.g. qwen3-coder-plus", required=True)
    env: Mapping[str, str] = fields.env()


def system_paths(env: Mapping[str, str]) -> tuple[Path, Path]:
    """The machine's system layer and system defaults (pinned in a launch's environment)."""
    system_ = Path(env[SYSTEM_ENV]) if env.get(SYSTEM_ENV) else SYSTEM_SETTINGS
    return system_, system_.parent / "system-defaults.json"


class QwenSpec(ToolSpec[QwenSide], Probing, Resuming, TuiFace):
    name = "qwen"
    label = "Qwen Code"
    short = "Qwen"
    program = "qwen"
    install_hint = "install it with `npm install -g @qwen-code/qwen-code`"
    tui_key = "w"  # q is Quit
    side = QwenSide
    families = {"qwen": r"QWEN_.*|DASHSCOPE_.*"}
    family_effects = {"qwen": "Qwen Code and DashScope SDK programs"}
    reads = ("qwen", "openai")
    exe_names = ("qwen",)
    # its bin is cli-entry.js, which runs cli.js in a child node (`node --expose-gc …/cli.js`)
    scripts = ("@qwen-code/qwen-code/cli-entry.js", "@qwen-code/qwen-code/cli.js")
    internal_vars = frozenset({
        "QWEN_CODE_CLI", "QWEN_CODE_MANAGED_NPM_ROOT", "QWEN_CODE_MANAGED_NPM_PIN", "QWEN_CODE_STARTUP_VERSION",
        "QWEN_CODE_LAUNCHER_PID", "QWEN_CODE_NO_RELAUNCH", "QWEN_CODE_PRIVATE_RELAUNCH_ENV_PROVENANCE",
        "QWEN_CODE_MANAGED_NPM_UPDATE",  # set by its launcher in its processes
        "QWEN_CODE_SESSION_ID", "QWEN_CODE_PROJECT_DIR", "QWEN_CODE_MODEL", "QWEN_CODE_MODEL_IDENTITY",
        "QWEN_CODE_AGENT_ID", "QWEN_CODE_PROMPT_ID",  # set for the commands it runs
    })
    model_example = "qwen3-coder-plus"
    official_hosts = VENDOR_HOSTS
    layers = LAYERS
    package = Package("npm", "@qwen-code/qwen-code", "0.24.4")

    def summary(self, side: QwenSide) -> list[str]:
        return [f"OPENAI_MODEL={side.model}"]

    def plan(self, profile: Profile, key: str, parent_env: Mapping[str, str], cwd: Path, *,
             paths: Paths, families: Families, args: Sequence[str] = (), launch_id: str | None = None,
             isolate: bool = False) -> LaunchPlan:
        side: QwenSide = profile.sides[self.name]
        launch_id = launch_id or new_launch_id()
        home = paths.tool_dir(profile.name, self.name)
        quiet = quiet_for(self, profile, side.base_url)
        system, defaults = system_paths(parent_env)
        own_system = home / "system-settings.json"
        b = EnvBuilder(profile, parent_env)
        b.add(side.env, SOURCE_TOOL)
        b.add({"OPENAI_BASE_URL": side.base_url, "OPENAI_MODEL": side.model}, SOURCE_ROUTING)
        # its own home, ccs's system layer, the machine's defaults and a trust list of the profile's, so
        # that no home .env moves them
        b.add({"QWEN_HOME": str(home), "QWEN_CODE_SYSTEM_SETTINGS_PATH": str(own_system),
               "QWEN_CODE_SYSTEM_DEFAULTS_PATH": str(defaults),
               "QWEN_CODE_TRUSTED_FOLDERS_PATH": str(home / "trustedFolders.json")}, SOURCE_ROUTING)
        b.add_secret(KEY_VAR, key)
        b.add_markers(profile, self.name, launch_id)

        try:  # ccs's system layer is the machine's with ccs's keys on top; an unreadable one is left out
            family.load_settings(system)
            base: Path | None = system
        except (OSError, ValueError, UnicodeDecodeError):
            base = None
        warnings = ["--isolate: Qwen Code runs with this folder untrusted, so the project's .qwen/settings.json and "
                    ".env files do not apply; it then overrides --yolo and every approval mode but default and plan "
                    "to default"] if isolate else []
        owned: dict[str, Any] = {
            "security": {"auth": {"selectedType": "openai"}, **({"folderTrust": {"enabled": True}} if isolate else {})},
            "model": {"name": side.model},
            # beats a provider entry for the model in any lower layer; the key stays in the environment
            "modelProviders": {"openai": [{"id": side.model, "name": side.model, "baseUrl": side.base_url,
                                           "envKey": KEY_VAR}]},
            # an update would run instead of the installed version: what is launched is what is installed
            "general": {"enableAutoUpdate": False},
            **(QUIET_SETTINGS if quiet else {}),
        }
        files = [
            FileToWrite(own_system, family.owned_settings(own_system, owned, base=base)),
            FileToWrite(home / "settings.json", family.owned_settings(home / "settings.json", {}, DROPPED_KEYS,
                                                                      families.steers)),
        ]
        if isolate:  # an explicit answer: no "Do you trust this folder?" at an interactive start
            files.append(FileToWrite(home / "trustedFolders.json", json.dumps({str(cwd): "DO_NOT_TRUST"}) + "\n"))
        return LaunchPlan(
            profile=profile.name, tool=self.name, argv=(self.program or "qwen", *args), env=b.env,
            sources=b.sources, secret_names=frozenset(b.secret_names), cwd=cwd, launch_id=launch_id,
            dirs=paths.tool_dirs(profile.name, self.name), files=tuple(files),
            base_urls={"OPENAI_BASE_URL": side.base_url}, models={"OPENAI_MODEL": side.model},
            key_id=profile.key_id, warnings=tuple(warnings),
            client=ClientSetup(home_key="qwen_home", home=str(home), quiet=quiet, isolate=isolate),
        )

    def endpoint(self, side: QwenSide) -> str | None:
        return side.base_url.rstrip("/") + "/chat/completions"

    def probes(self, plan: LaunchPlan, profile: Profile) -> list[ProbeSpec]:
        return [chat_probe(plan.base_urls["OPENAI_BASE_URL"], plan.models["OPENAI_MODEL"])]

    def batch(self, args: Sequence[str]) -> bool:
        return has_option(args, "-p", "--prompt")

    def resume_command(self, plan: LaunchPlan, since: float) -> str | None:
        if not plan.client.home:
            return None
        home = Path(plan.client.home)
        session = newest_session_id(home.glob("projects/*/chats/*.jsonl"), since)
        return f"--resume {session}" if session else None


TOOL = QwenSpec()
