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
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ccswitch_tui import policy
from ccswitch_tui.model import (
    ERROR,
    SOURCE_ROUTING,
    SOURCE_TOOL,
    WARN,
    FileToWrite,
    LaunchPlan,
    Profile,
    Refusal,
    new_launch_id,
)
from ccswitch_tui.paths import Paths
from ccswitch_tui.tools import fields
from ccswitch_tui.tools import gemini_family as family
from ccswitch_tui.tools.environment import EnvBuilder
from ccswitch_tui.tools.fields import string, url
from ccswitch_tui.tools.spec import (
    DoctorContext,
    DoctorPart,
    ProbeSpec,
    ToolSpec,
    chat_probe,
    has_option,
    newest_session_id,
)

KEY_VAR = "OPENAI_API_KEY"
SYSTEM_ENV = "CCS_QWEN_SYSTEM_SETTINGS"  # where to look for the system layer instead (tests)
SYSTEM_SETTINGS = Path("/etc/qwen-code/settings.json")
# settings keys that decide where requests go, with which credentials, or through which proxy
ROUTING_KEYS = ("security.auth.selectedType", "security.auth.enforcedType", "security.auth.useExternal",
                "security.auth.baseUrl", "security.auth.apiKey", "model.name", "modelProviders", "proxy", "env",
                "security.folderTrust.enabled")
# … of which ccs's system layer sets its own (or the environment beats them), so no other layer decides them
OWNED_KEYS = ("security.auth.selectedType", "security.auth.baseUrl", "security.auth.apiKey", "model.name",
              "modelProviders", "security.folderTrust.enabled")
# … and those ccs removes from the profile's user layer (an interactive /auth may write them)
DROPPED_KEYS = ("security.auth.enforcedType", "security.auth.useExternal", "security.auth.baseUrl",
                "security.auth.apiKey", "proxy")
QUIET_SETTINGS = {"privacy": {"usageStatisticsEnabled": False}}
VENDOR_HOSTS = frozenset({"dashscope.aliyuncs.com", "dashscope-intl.aliyuncs.com", "dashscope-us.aliyuncs.com"})


@dataclass(frozen=True, kw_only=True)
class QwenSide:
    """The [qwen] table, declared once (tools/fields.py)."""

    base_url: str = url(hint="default: the provider's; requests go to …/chat/completions")
    model: str = string("model", hint="required (OPENAI_MODEL), e.g. qwen3-coder-plus", required=True)
    env: Mapping[str, str] = fields.env()


def system_paths(env: Mapping[str, str]) -> tuple[Path, Path]:
    """The system layer and the system defaults a ccs launch gives Qwen Code (pinned in its environment)."""
    system = Path(env[SYSTEM_ENV]) if env.get(SYSTEM_ENV) else SYSTEM_SETTINGS
    return system, system.parent / "system-defaults.json"


def quiet_for(profile: Profile, base_url: str) -> bool:
    """The profile's ``[policy] quiet``, or by default: on unless the endpoint is DashScope (the usage
    statistics host is Alibaba's; another vendor's official API does not make it that vendor's)."""
    if profile.quiet is not None:
        return profile.quiet
    host = (urlsplit(base_url).hostname or "").lower()
    return not (host in VENDOR_HOSTS or host.endswith(".dashscope.aliyuncs.com"))


def routing_var(name: str) -> bool:
    """A variable that changes where a request goes, with which key, through which proxy, or what code runs."""
    return policy.kind(name) is not None or policy.routing_family(name) is not None


def _show(key: str, value: Any) -> Any:
    """A layer's value as doctor and messages print it: keys masked, URLs without credentials."""
    if key == "security.auth.apiKey":
        return policy.mask(str(value))
    if key in ("security.auth.baseUrl", "proxy"):
        return policy.redact_url(str(value))
    if key == "modelProviders":
        entries = [e for v in value.values() if isinstance(v, list) for e in v if isinstance(e, dict)] \
            if isinstance(value, dict) else []
        return ", ".join(f"{e.get('id')}→{policy.redact_url(str(e.get('baseUrl') or '(its default)'))}"
                         for e in entries) or "{}"
    if key == "env":
        routing = {k: v for k, v in value.items() if routing_var(k)} if isinstance(value, dict) else {}
        return ", ".join(f"{k}={policy.shown(k, str(v))}" for k, v in routing.items()) or None
    if key == "security.folderTrust.enabled":
        return None if value is not False else False  # only turning it off opens the door to a project
    return value


def _routing(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    return family.read_layer(path, ROUTING_KEYS, _show)


def _env_table_names(path: Path) -> list[str]:
    """The routing variables a settings layer's ``env`` table fills in (where the environment lacks them)."""
    try:
        table = family.dig(family.load_settings(path), "env")
    except (OSError, ValueError, UnicodeDecodeError):
        return []
    return [n for n in table if routing_var(n)] if isinstance(table, dict) else []


def home_env_files(child_env: Mapping[str, str], qwen_home: Path | None) -> list[Path]:
    """The ``.env`` files Qwen Code reads at every start, whatever the folder: its home's, the legacy
    ``~/.qwen/.env`` and ``~/.env``."""
    home = Path(child_env.get("HOME") or os.path.expanduser("~"))
    out = [qwen_home / ".env"] if qwen_home else []
    return list(dict.fromkeys([*out, home / ".qwen" / ".env", home / ".env"]))


def project_env_files(cwd: Path, home: Path) -> list[Path]:
    """The project ``.env`` a Qwen Code started by hand in ``cwd`` would read (in a trusted folder):
    the first ``.qwen/.env`` or ``.env`` from ``cwd`` up to the home folder."""
    for folder in (cwd, *cwd.parents):
        if folder == home:
            return []
        for candidate in (folder / ".qwen" / ".env", folder / ".env"):
            if candidate.is_file():
                return [candidate]
    return []


class QwenSpec(ToolSpec[QwenSide]):
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

    def summary(self, side: QwenSide) -> list[str]:
        return [f"OPENAI_MODEL={side.model}"]

    def plan(self, profile: Profile, key: str, parent_env: Mapping[str, str], cwd: Path, *,
             paths: Paths, args: Sequence[str] = (), launch_id: str | None = None,
             isolate: bool = False) -> LaunchPlan:
        side: QwenSide = profile.sides[self.name]
        launch_id = launch_id or new_launch_id()
        home = paths.tool_dir(profile.name, self.name)
        quiet = quiet_for(profile, side.base_url)
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

        warnings: list[str] = []
        refusals: list[Refusal] = []
        routing_keys, system_error = _routing(system)
        if system_error:
            warnings.append(f"Qwen Code system settings {system}: {system_error}; ccs launches it without them")
        elif routing_keys:
            refusals.append(Refusal(
                "settings-override",
                f"the system Qwen Code settings {system} set {', '.join(routing_keys)}, which the machine's "
                "operator chose for every Qwen Code; a ccs launch would put the profile's routing in their place",
                ("--force to launch anyway with the profile's routing (recorded in the manifest)",
                 "ask whoever manages this machine to remove them"),
                flags=("force",)))
        routing_keys, error = _routing(defaults)
        if error:
            warnings.append(f"Qwen Code system defaults {defaults}: {error}")
        elif leftover := [k for k in routing_keys or {} if k not in (*OWNED_KEYS, "env")] + [
                f"env.{n}" for n in _env_table_names(defaults) if not b.env.get(n)]:
            refusals.append(family.system_refusal(self.label, defaults, leftover, "the environment ccs gives it"))
        taken = {p: names for p in home_env_files(b.env, home)
                 if (names := [n for n in family.read_dotenv(p, routing_var) if not b.env.get(n)])}
        if taken:
            where = "; ".join(f"{p} sets {', '.join(names)}" for p, names in taken.items())
            refusals.append(Refusal(
                "settings-override",
                f"{where}, which Qwen Code loads into its environment at every start (these files are read "
                "whatever the folder), so the launch would not get only the profile's routing",
                ("remove them from the file", "--force to launch anyway (recorded in the manifest)"),
                flags=("force",)))
        project = cwd / ".qwen" / "settings.json"
        project_keys = _routing(project)[0] or {}
        project_env = project_env_files(cwd, Path(b.env.get("HOME") or "/"))
        if isolate:
            warnings.append("--isolate: Qwen Code runs with this folder untrusted, so the project's "
                            ".qwen/settings.json and .env files do not apply; it then overrides --yolo and every "
                            "approval mode but default and plan to default")
        else:
            unbeaten = [f"{project} sets {k}" for k in project_keys if k not in (*OWNED_KEYS, "env")]
            unbeaten += [f"{project} sets env.{n}" for n in _env_table_names(project) if not b.env.get(n)]
            unbeaten += [f"{p} sets {n}" for p in project_env for n in family.read_dotenv(p, routing_var)
                         if not b.env.get(n)]
            if unbeaten:
                refusals.append(Refusal(
                    "settings-override",
                    f"{'; '.join(unbeaten)}, which Qwen Code takes in this folder and ccs's own layer cannot replace",
                    ("--isolate to launch with this folder untrusted (the project's files do not apply; Qwen Code "
                     "then allows only the default and plan approval modes)",
                     "--force to launch anyway (recorded in the manifest)"),
                    flags=("isolate", "force")))
            beaten = [str(project)] if any(k in OWNED_KEYS for k in project_keys) or any(
                b.env.get(n) for n in _env_table_names(project)) else []
            beaten += [str(p) for p in project_env if any(b.env.get(n) for n in family.read_dotenv(p, routing_var))]
            if beaten:
                warnings.append(f"{', '.join(beaten)} would redirect a Qwen Code started here by hand; ccs's own "
                                "settings layer and environment beat what they set")
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
            FileToWrite(own_system, family.owned_settings(own_system, owned, base=None if system_error else system)),
            FileToWrite(home / "settings.json", family.owned_settings(home / "settings.json", {}, DROPPED_KEYS,
                                                                      routing_var)),
        ]
        if isolate:  # an explicit answer: no "Do you trust this folder?" at an interactive start
            files.append(FileToWrite(home / "trustedFolders.json", json.dumps({str(cwd): "DO_NOT_TRUST"}) + "\n"))
        return LaunchPlan(
            profile=profile.name, tool=self.name, argv=(self.program or "qwen", *args), env=b.env,
            sources=b.sources, secret_names=frozenset(b.secret_names), cwd=cwd, launch_id=launch_id,
            dirs=paths.tool_dirs(profile.name, self.name), files=tuple(files),
            base_urls={"OPENAI_BASE_URL": side.base_url}, models={"OPENAI_MODEL": side.model},
            key_id=profile.key_id, warnings=tuple(warnings), refusals=tuple(refusals),
            extra={"qwen_home": str(home), "quiet": quiet, "isolate": isolate},
        )

    def endpoint(self, side: QwenSide) -> str | None:
        return side.base_url.rstrip("/") + "/chat/completions"

    def probes(self, plan: LaunchPlan, profile: Profile) -> list[ProbeSpec]:
        return [chat_probe(plan.base_urls["OPENAI_BASE_URL"], plan.models["OPENAI_MODEL"])]

    def batch(self, args: Sequence[str]) -> bool:
        return has_option(args, "-p", "--prompt")

    def resume_command(self, plan: LaunchPlan, since: float) -> str | None:
        home = Path(plan.extra["qwen_home"])
        session = newest_session_id(home.glob("projects/*/chats/*.jsonl"), since)
        return f"--resume {session}" if session else None

    def doctor(self, ctx: DoctorContext) -> DoctorPart:
        """The layers of a Qwen Code started by hand here: system, system defaults, user, project, and
        the .env files it reads."""
        home = Path(ctx.environ.get("HOME") or os.path.expanduser("~"))
        qwen_home = Path(ctx.environ["QWEN_HOME"]) if ctx.environ.get("QWEN_HOME") else home / ".qwen"
        system, defaults = system_paths(ctx.environ)
        unaffected = "ccs launches are not affected; remove it from the file to choose the provider in one place"
        part = family.layers_part("qwen_layers", "qwen code settings layers (system beats the rest)", self.label,
                                  ctx.cwd, [
            family.Layer("system", system, ERROR, "ccs launches refuse it (--force to launch anyway)",
                         ROUTING_KEYS, _show),
            family.Layer("defaults", defaults, WARN, "ccs launches set their own, or refuse it when they "
                         "cannot (--force to launch anyway)", ROUTING_KEYS, _show),
            family.Layer("user", qwen_home / "settings.json", WARN, unaffected, ROUTING_KEYS, _show),
            family.Layer("project", ctx.cwd / ".qwen" / "settings.json", ERROR,
                         "ccs launches put their own system layer above it and refuse what that cannot replace "
                         "(--isolate, --force); remove it from the file to choose the provider in one place",
                         ROUTING_KEYS, _show),
        ])
        family.dotenv_findings(
            part, home_env_files(ctx.environ, Path(ctx.environ["QWEN_HOME"]) if ctx.environ.get("QWEN_HOME") else None),
            routing_var, "which every Qwen Code loads at start when its environment lacks it, whatever the folder; "
            "ccs launches refuse it unless they set it themselves; remove it to keep routing in one place", ERROR)
        family.dotenv_findings(
            part, project_env_files(ctx.cwd, home), routing_var,
            f"which a Qwen Code started in {ctx.cwd} takes when the shell lacks it; ccs launches refuse it unless "
            "they set it themselves (--isolate, --force); remove it to keep routing in one place")
        return part


TOOL = QwenSpec()
