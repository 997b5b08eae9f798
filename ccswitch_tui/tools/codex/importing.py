"""Importing Codex's providers: its live home (``config.toml`` + ``auth.json``), a CC Switch row of the
``codex`` app (``{"auth": {...}, "config": TOML}``), and the way back (`ccs export --format json`).

An entry becomes a ``CodexFields``: unlike a profile's ``CodexSide``, the provider id may be left to
the profile's name (None: ``default_provider_id`` once the profile is named), and there is no env
table to import.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ccswitch_tui.errors import UsageError
from ccswitch_tui.model import Profile
from ccswitch_tui.tools.codex import (
    BUILTIN_PROVIDERS,
    PROVIDER_ID_RE,
    REASONING_EFFORTS,
    CodexSide,
    default_provider_id,
)
from ccswitch_tui.tools.importing import (
    ClientImporter,
    EnvCheck,
    EnvCleaner,
    LiveOption,
    LiveRead,
    Parsed,
    RowProblem,
    fail,
    nonblank,
    norm_url,
    own_dir,
    parse_toml_text,
    read_file_text,
    read_json_file,
    routing,
    skip,
)
from ccswitch_tui.valueclass import valueclass

OPENAI_DEFAULT_URL = "https://api.openai.com/v1"


@valueclass(frozen=True)
class CodexFields:
    """The [codex] table an import brings (no env table; the provider id may be left to the profile)."""

    base_url: str
    model: str
    provider_id: str | None = None
    reasoning_effort: str | None = None
    wire_api: str = "responses"


def codex_home(environ: Mapping[str, str], home: Path) -> Path:
    base = own_dir(environ, "CODEX_HOME")
    return Path(base).expanduser() if base else home / ".codex"


def parse_config(config: Mapping[str, Any], auth: Any, environ: Mapping[str, str] | None = None) -> Parsed:
    """A parsed Codex config.toml (plain dict) and its auth.json object → [codex] fields and the key.
    Raises RowProblem."""
    environ = environ or {}
    warnings: list[str] = []
    cfg = _selected_profile(config, warnings)
    pid = routing(cfg, "model_provider", "") or "openai"
    providers = cfg.get("model_providers") or {}
    if not isinstance(providers, Mapping):
        raise fail("`model_providers` is not a table")
    entry = providers.get(pid)
    if entry is not None and not isinstance(entry, Mapping):
        raise fail(f"[model_providers.{pid}] is not a table")
    auth = auth if isinstance(auth, Mapping) else {}
    auth_key = nonblank(auth.get("OPENAI_API_KEY"))

    if entry is None:
        _check_builtin(pid, auth, auth_key)
        base_url = routing(cfg, "openai_base_url", "") or OPENAI_DEFAULT_URL
        provider_name: str | None = "OpenAI"
        wire: str | None = None
        entry = {}
    else:
        base_url, provider_name, wire = _own_provider(pid, entry, warnings)
    provider_id = _usable_provider_id(pid, entry, warnings)

    model = routing(cfg, "model", "")
    if model is None:
        raise fail("no `model` in the Codex config; a profile needs one")
    effort = nonblank(cfg.get("model_reasoning_effort"))
    if effort is not None and effort not in REASONING_EFFORTS:
        warnings.append(f"model_reasoning_effort = {effort!r} is not one of {', '.join(REASONING_EFFORTS)}; dropped")
        effort = None
    key, key_from = _provider_key(entry, environ, auth_key, warnings)

    # A Chat Completions provider stays one: ccs's bridge translates for Codex (wire_api = "chat").
    fields = CodexFields(base_url=base_url.rstrip("/"), model=model, provider_id=provider_id,
                         reasoning_effort=effort, wire_api="chat" if wire == "chat" else "responses")
    return Parsed(fields=fields, provider_name=provider_name, key=key, key_from=key_from, warnings=warnings)


def _selected_profile(config: Mapping[str, Any], warnings: list[str]) -> dict[str, Any]:
    """The config with the settings of the [profiles.NAME] table its top-level ``profile`` names."""
    cfg = dict(config)
    selected = nonblank(cfg.get("profile"))
    if selected:
        overlay = (cfg.get("profiles") or {}).get(selected) if isinstance(cfg.get("profiles"), Mapping) else None
        if isinstance(overlay, Mapping):
            cfg.update({k: v for k, v in overlay.items() if k in ("model", "model_provider", "model_reasoning_effort")})
            warnings.append(f"imported the settings of profile {selected!r} named by the top-level `profile` key")
        else:
            warnings.append(f"top-level `profile = {selected!r}` names no [profiles.{selected}] table; ignored")
    return cfg


def _check_builtin(pid: str, auth: Mapping[str, Any], auth_key: str | None) -> None:
    """A provider without a table: the built-in OpenAI one with an API key, else RowProblem."""
    if pid != "openai":
        if pid in BUILTIN_PROVIDERS:
            raise skip(f"uses Codex's built-in provider {pid!r} (a local server without a key); nothing to import")
        raise fail(f"model_provider = {pid!r} but there is no [model_providers.{pid}] table")
    if auth_key is None:
        if auth.get("tokens"):
            raise skip("signs in with a ChatGPT account (auth tokens), which ccs does not import")
        raise skip("the built-in OpenAI provider without an API key; nothing to import")


def _own_provider(pid: str, entry: Mapping[str, Any], warnings: list[str]) -> tuple[str, str | None, str | None]:
    """A [model_providers.ID] table's base URL, name and wire API."""
    base_url = routing(entry, "base_url", f"[model_providers.{pid}] ")
    if base_url is None:
        raise fail(f"[model_providers.{pid}] has no base_url")
    wire = nonblank(entry.get("wire_api"))
    if wire not in (None, "responses", "chat"):
        warnings.append(f"wire_api = {wire!r} is unknown; the profile uses \"responses\"")
    ignored = sorted(k for k in ("query_params", "http_headers", "env_http_headers") if entry.get(k))
    if ignored:
        warnings.append(f"[model_providers.{pid}] {', '.join(ignored)} not imported (profiles have no such field)")
    return base_url, nonblank(entry.get("name")), wire


def _usable_provider_id(pid: str, entry: Mapping[str, Any], warnings: list[str]) -> str | None:
    """The provider id the profile keeps (None: the profile's own)."""
    if pid in BUILTIN_PROVIDERS:
        if entry:
            warnings.append(f"provider id {pid!r} is built into Codex, which refuses such an entry; "
                            "the profile uses its own id")
        return None
    if not PROVIDER_ID_RE.fullmatch(pid):
        warnings.append(f"provider id {pid!r} is not usable; the profile uses its own id")
        return None
    return pid


def _provider_key(entry: Mapping[str, Any], environ: Mapping[str, str], auth_key: str | None,
                  warnings: list[str]) -> tuple[str | None, str | None]:
    """The key Codex would send and where it came from (``config``, ``env:NAME``, ``auth``)."""
    bearer = nonblank(entry.get("experimental_bearer_token"))
    env_key = nonblank(entry.get("env_key"))
    if bearer:
        return bearer, "config"
    if env_key:  # Codex sends the value of env_key, whatever auth.json holds
        key = nonblank(environ.get(env_key))
        if key:
            return key, f"env:{env_key}"
        if auth_key:
            warnings.append(f"the provider reads its key from ${env_key}, which is not set here; the key in "
                            "auth.json was imported instead")
            return auth_key, "auth"
        warnings.append(f"the key is read from ${env_key}, which is not set here")
        return None, None
    if auth_key:
        return auth_key, "auth"
    return None, None


class CodexImporter(ClientImporter["CodexSide | CodexFields"]):
    cc_switch_app = "codex"
    live_label = "Codex's live config"
    live_what = "a Codex home folder"
    live_option = LiveOption("--home", "home", True,
                             "Codex home holding config.toml and auth.json (default $CODEX_HOME, else ~/.codex).")
    command_help = "Import the provider that Codex's config.toml selects (model_provider), with its key."
    name_help = "Profile name (default: from the provider's name or host)."
    scrub_help = "Then remove the key from config.toml / auth.json (atomic rewrite, everything else kept)."
    run_export = "openai"
    run_rank = 0
    managed_provider_types = ("codex_oauth",)

    def live_path(self, environ: Mapping[str, str], home: Path) -> Path:
        return codex_home(environ, home)

    def read_live(self, where: Path, environ: Mapping[str, str], env_check: EnvCheck) -> LiveRead:
        config_path, auth_path = where / "config.toml", where / "auth.json"
        text = read_file_text(config_path, "not found (use --home DIR for another Codex home)")
        assert text is not None
        auth = read_json_file(auth_path, required=False)
        out = LiveRead(source=str(config_path), origin=f"Codex config {config_path}",
                       read=[str(config_path)] + ([str(auth_path)] if auth is not None else []),
                       files={"config": config_path, "auth": auth_path},
                       formats={"config": "toml", "auth": "json"})
        try:
            try:
                cfg = parse_toml_text(text)
            except RowProblem as p:
                raise UsageError(f"{config_path}: {p.reason.removeprefix('config is ')}") from None
            out.parsed = parse_config(cfg, auth, environ)
        except RowProblem as p:
            out.problem = p
        return out

    def from_cc_switch(self, settings: Mapping[str, Any], meta: Mapping[str, Any], env_check: EnvCheck) -> Parsed:
        config_text = settings.get("config", "")
        if config_text is None:
            config_text = ""
        if not isinstance(config_text, str):
            raise fail("settings_config.config is not a TOML text")
        return parse_config(parse_toml_text(config_text), settings.get("auth"), environ={})

    def compared(self, side: CodexSide | CodexFields) -> dict[str, Any]:
        """The base URL, the model, the reasoning effort and the wire API (not the provider id or env)."""
        return {"base_url": norm_url(side.base_url), "model": side.model, "reasoning_effort": side.reasoning_effort,
                "wire_api": side.wire_api}

    def table(self, side: CodexSide | CodexFields, provider_base_url: str, profile_name: str) -> dict[str, Any]:
        t: dict[str, Any] = {}
        if norm_url(side.base_url) != norm_url(provider_base_url):
            t["base_url"] = side.base_url
        t["model"] = side.model
        t["provider_id"] = side.provider_id or default_provider_id(profile_name)
        if side.reasoning_effort:
            t["reasoning_effort"] = side.reasoning_effort
        if side.wire_api != "responses":
            t["wire_api"] = side.wire_api
        return t

    def to_cc_switch(self, profile: Profile, side: CodexSide | CodexFields, shared_env: Mapping[str, str],
                     env_elsewhere: bool, clean: EnvCleaner, warnings: list[str]) -> dict[str, Any]:
        import tomlkit  # lazy: tomlkit loads only when a profile is written

        doc = tomlkit.document()
        provider_id = side.provider_id or default_provider_id(profile.name)  # a profile's side always has one
        doc.add("model_provider", provider_id)
        doc.add("model", side.model)
        if side.reasoning_effort:
            doc.add("model_reasoning_effort", side.reasoning_effort)
        providers = tomlkit.table(is_super_table=True)
        entry = tomlkit.table()
        entry.add("name", profile.provider.name)
        entry.add("base_url", side.base_url)
        entry.add("wire_api", side.wire_api)
        entry.add("requires_openai_auth", True)
        providers.add(provider_id, entry)
        doc.add("model_providers", providers)
        if (isinstance(side, CodexSide) and side.env) or (profile.env and not env_elsewhere):
            warnings.append(f"{profile.name}: [codex.env] / [env] have no place in a CC Switch Codex provider; "
                            "not exported")
        return {"settingsConfig": {"auth": {"OPENAI_API_KEY": ""}, "config": tomlkit.dumps(doc)}}


IMPORTER = CodexImporter()
