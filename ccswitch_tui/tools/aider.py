"""Aider (PyPI `aider-chat`, the ``aider`` command): routed on its command line and by a model settings
file of ccs's own, the key only in the child's environment (``AIDER_OPENAI_API_KEY``).

Measured with aider-chat 0.86.2 (Python 3.11) against loopback stubs, in a private network namespace:
- ``--model openai/M`` with ``OPENAI_API_BASE`` and ``OPENAI_API_KEY`` sends ``POST {base}/chat/completions``
  with ``Authorization: Bearer <key>``.
- ``.env`` files are loaded with override: ``~/.aider/oauth-keys.env``, ``~/.env``, the git root's, the
  working folder's, then ``--env-file``; they beat the process environment (the git root's beat the working
  folder's in one trial). ``--openai-api-base`` (applied after them) beats their ``OPENAI_API_BASE``, but
  ``OPENAI_BASE_URL`` there beats ``--openai-api-base``; an ``api_base`` in a model settings entry beats both.
  ``AIDER_OPENAI_API_KEY`` in the environment beats their ``OPENAI_API_KEY`` (and a config file's
  ``openai-api-key`` and ``api-key``); their own ``AIDER_OPENAI_API_KEY`` beats the environment's. A proxy
  variable there sends the requests through it.
- ``.aider.conf.yml`` in the working folder, the git root and the home (that order of precedence): the
  command line and ``AIDER_*`` variables beat it; its ``set-env`` sets variables after the ``.env`` files.
- ``.aider.model.settings.yml`` (home, git root, working folder, then ``--model-settings-file``; a later
  file replaces an earlier one's entry of the same name): an entry's ``extra_params.api_base`` redirects its
  model, and the global entry ``aider/extra_params`` beats a model's own. ccs's file comes last and holds
  both entries for the launch's model.
- ``.aider.model.metadata.json``: ``litellm_provider`` or ``api_base`` there changed nothing.
- Besides the provider it contacts pypi.org (update check; ``--no-check-update``: with ``--yes-always`` an
  update would be installed, so ccs always turns it off) and raw.githubusercontent.com (litellm's model price
  list; stopped only by ``LITELLM_LOCAL_MODEL_COST_MAP=True`` and a metadata entry for the model, which a
  quiet launch gives it). Analytics go to PostHog only after an opt-in; a quiet launch passes ``--no-analytics``.
  Those hosts are not any provider's, so a launch is quiet by default everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ccswitch_tui.model import SOURCE_ROUTING, SOURCE_TOOL, ClientSetup, FileToWrite, LaunchPlan, Profile, new_launch_id
from ccswitch_tui.paths import Paths
from ccswitch_tui.policy.families import Families
from ccswitch_tui.tools import fields
from ccswitch_tui.tools.capabilities import Probing, TrimmingArgs, TuiFace
from ccswitch_tui.tools.environment import EnvBuilder
from ccswitch_tui.tools.fields import string, url
from ccswitch_tui.tools.layers import Key, Layer, Package, argv, git_root, home, state, working
from ccswitch_tui.tools.quiet import quiet_for
from ccswitch_tui.tools.spec import ProbeSpec, ToolSpec, chat_probe
from ccswitch_tui.valueclass import valueclass

KEY_VAR = "AIDER_OPENAI_API_KEY"
SETTINGS_FILE = "model-settings.yml"  # YAML: ccs writes it as JSON, which YAML reads
METADATA_FILE = "model-metadata.json"
GLOBAL_ENTRY = "aider/extra_params"  # the model settings entry whose extra_params apply to every model

# The options of its config files (and of the command line, which beats them) that route or load
_CONF_KEYS = (
    Key("model", "model"), Key("weak-model", "model"), Key("editor-model", "model"), Key("alias", "model"),
    Key("openai-api-base", "base-url"),
    Key("openai-api-key", "key", beaten_by=(f"env:{KEY_VAR}",)),
    Key("api-key", "key", beaten_by=(f"env:{KEY_VAR}",)),
    Key("set-env", "env"), Key("env-file", "config"),
    Key("model-settings-file", "config"), Key("model-metadata-file", "config"),
    Key("openai-api-type", "provider"), Key("openai-api-version", "provider"),
    Key("openai-api-deployment-id", "provider"), Key("openai-organization-id", "provider"),
    Key("verify-ssl", "trust", only=(False,)),
)
# The variables of its .env files that route it (they beat the environment)
_ENV_NAMES = (r"OPENAI_.*|LITELLM_.*|AIDER_(OPENAI_.*|API_KEY|SET_ENV|VERIFY_SSL|ALIAS|ENV_FILE)|"
              r"HTTPS?_PROXY|https?_proxy|ALL_PROXY|all_proxy|SSL_VERIFY|SSL_CERT_FILE|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE")
_ENV_KEYS = (
    Key("OPENAI_API_BASE", "base-url", beaten_by=("openai-api-base",)),
    Key("OPENAI_BASE_URL", "base-url", beaten_by=(f"{GLOBAL_ENTRY}.extra_params.api_base",)),
    Key("OPENAI_API_KEY", "key", beaten_by=(f"env:{KEY_VAR}",)),
    Key("AIDER_MODEL", "model", beaten_by=("model",)),
    Key("AIDER_WEAK_MODEL", "model", beaten_by=("weak-model",)),
    Key("AIDER_EDITOR_MODEL", "model", beaten_by=("editor-model",)),
    Key("AIDER_OPENAI_API_BASE", "base-url", beaten_by=("openai-api-base",)),
    Key("AIDER_MODEL_SETTINGS_FILE", "config", beaten_by=("model-settings-file",)),
    Key("AIDER_MODEL_METADATA_FILE", "config", beaten_by=("model-metadata-file",)),
    Key("AIDER_API_KEY", "key", beaten_by=(f"env:{KEY_VAR}",)),
    Key("*", "env", names=_ENV_NAMES),
)
_OTHERS = "an entry for another model does not apply to the launch's"
_ENTRIES = (Key("*", "provider", others=_OTHERS),)
_META = "measured: litellm_provider and api_base there change nothing (it holds context windows and prices)"
LAYERS = (
    Layer("flags", "ccs", "argv", argv(), _CONF_KEYS, why="its command line beats every file and variable"),
    Layer("git-env", "project", "dotenv", git_root(".env"), _ENV_KEYS, why="loaded over the environment"),
    Layer("cwd-env", "project", "dotenv", working(".env"), _ENV_KEYS, why="loaded over the environment"),
    Layer("home-env", "user", "dotenv", home(".env"), _ENV_KEYS, why="loaded over the environment"),
    Layer("oauth-env", "user", "dotenv", home(".aider/oauth-keys.env"), _ENV_KEYS,
          why="loaded over the environment (first of the .env files)"),
    Layer("settings", "ccs", "yaml", state(SETTINGS_FILE), _ENTRIES,
          why="--model-settings-file: read last, its entries replace the others of the same name"),
    Layer("cwd-settings", "project", "yaml", working(".aider.model.settings.yml"), _ENTRIES),
    Layer("git-settings", "project", "yaml", git_root(".aider.model.settings.yml"), _ENTRIES),
    Layer("home-settings", "user", "yaml", home(".aider.model.settings.yml"), _ENTRIES),
    Layer("cwd-conf", "project", "yaml", working(".aider.conf.yml"), _CONF_KEYS,
          why="the command line and AIDER_* variables beat it"),
    Layer("git-conf", "project", "yaml", git_root(".aider.conf.yml"), _CONF_KEYS,
          why="the command line and AIDER_* variables beat it"),
    Layer("home-conf", "user", "yaml", home(".aider.conf.yml"), _CONF_KEYS,
          why="the command line and AIDER_* variables beat it"),
    Layer("cwd-metadata", "project", "json", working(".aider.model.metadata.json"), why=_META),
    Layer("git-metadata", "project", "json", git_root(".aider.model.metadata.json"), why=_META),
    Layer("home-metadata", "user", "json", home(".aider.model.metadata.json"), why=_META),
)


@valueclass(frozen=True, kw_only=True)
class AiderSide:
    """The [aider] table, declared once (tools/fields.py)."""

    base_url: str = url(hint="default: the provider's; requests go to …/chat/completions")
    model: str = string("model", hint="required, e.g. gpt-4.1 (Aider gets openai/MODEL)", required=True)
    env: Mapping[str, str] = fields.env()

    @property
    def model_ref(self) -> str:
        """The model as Aider (litellm) names an OpenAI-compatible one."""
        return self.model if self.model.startswith("openai/") else f"openai/{self.model}"


class AiderSpec(ToolSpec[AiderSide], Probing, TuiFace, TrimmingArgs):
    name = "aider"
    label = "Aider"
    short = "Aider"
    program = "aider"
    install_hint = "install it with `pipx install aider-chat`"
    tui_key = "h"
    side = AiderSide
    families = {"aider": r"AIDER_.*"}
    family_effects = {"aider": "Aider"}
    reads = ("aider", "openai")
    exe_names = ("aider",)
    scripts = ("aider-chat/bin/aider",)  # the console script its virtual environment's Python runs
    model_example = "gpt-4.1"
    official_hosts = frozenset()  # what it contacts besides the provider is PyPI's and GitHub's
    layers = LAYERS
    package = Package("pypi", "aider-chat", "0.86.2")

    def summary(self, side: AiderSide) -> list[str]:
        return [f"model={side.model_ref}"]

    def endpoint(self, side: AiderSide) -> str | None:
        return side.base_url.rstrip("/") + "/chat/completions"

    def probes(self, plan: LaunchPlan, profile: Profile) -> list[ProbeSpec]:
        side: AiderSide = profile.sides[self.name]
        return [chat_probe(plan.base_urls["openai-api-base"], side.model.removeprefix("openai/"))]

    def user_argv(self, argv: Sequence[str]) -> list[str]:
        """Without the options ccs puts before the user's."""
        out, rest = list(argv[:1]), list(argv[1:])
        ours = {"--model", "--weak-model", "--editor-model", "--openai-api-base", "--model-settings-file",
                "--model-metadata-file"}
        while rest and (rest[0] in ours or rest[0] in ("--no-check-update", "--no-analytics")):
            rest = rest[2:] if rest[0] in ours else rest[1:]
        return out + rest

    def plan(self, profile: Profile, key: str, parent_env: Mapping[str, str], cwd: Path, *,
             paths: Paths, families: Families, args: Sequence[str] = (), launch_id: str | None = None,
             isolate: bool = False) -> LaunchPlan:
        side: AiderSide = profile.sides[self.name]
        launch_id = launch_id or new_launch_id()
        folder = paths.tool_dir(profile.name, self.name)
        quiet = quiet_for(self, profile, side.base_url)
        model = side.model_ref
        b = EnvBuilder(profile, parent_env)
        b.add(side.env, SOURCE_TOOL)
        if quiet and "LITELLM_LOCAL_MODEL_COST_MAP" not in {**profile.env, **side.env}:
            b.add({"LITELLM_LOCAL_MODEL_COST_MAP": "True"}, SOURCE_ROUTING)
        b.add_secret(KEY_VAR, key)
        b.add_markers(profile, self.name, launch_id)
        entry = {"extra_params": {"api_base": side.base_url}}
        settings: list[dict[str, Any]] = [{"name": model, **entry}, {"name": GLOBAL_ENTRY, **entry}]
        files = [FileToWrite(folder / SETTINGS_FILE, json.dumps(settings, indent=2) + "\n")]
        argv = [self.program or "aider", "--model", model, "--weak-model", model, "--editor-model", model,
                "--openai-api-base", side.base_url, "--model-settings-file", str(folder / SETTINGS_FILE)]
        if quiet:  # a metadata entry of its own: no download of litellm's price list for the model
            meta = {model: {"litellm_provider": "openai", "mode": "chat"}}
            files.append(FileToWrite(folder / METADATA_FILE, json.dumps(meta, indent=2) + "\n"))
            argv += ["--model-metadata-file", str(folder / METADATA_FILE), "--no-analytics"]
        argv.append("--no-check-update")  # an update would install itself: what is launched is what is installed
        return LaunchPlan(
            profile=profile.name, tool=self.name, argv=(*argv, *args), env=b.env, sources=b.sources,
            secret_names=frozenset(b.secret_names), cwd=cwd, launch_id=launch_id,
            dirs=paths.tool_dirs(profile.name, self.name), files=tuple(files),
            base_urls={"openai-api-base": side.base_url}, models={"model": model}, key_id=profile.key_id,
            client=ClientSetup(quiet=quiet),
        )


TOOL = AiderSpec()
