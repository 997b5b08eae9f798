"""`ccs list`, `show`, `new`, `edit`, `rm`, `presets`."""

from __future__ import annotations

import re
import shlex
from typing import Any

import click

from ccswitch_tui import tools
from ccswitch_tui.commands.common import Context, confirm_or_refuse, emit_json, join, json_option, pass_ctx, table
from ccswitch_tui.errors import CcsError, UsageError
from ccswitch_tui.launch.removal import carry_out, plan_removal
from ccswitch_tui.launch.toolstate import orphans, remove
from ccswitch_tui.model import Profile
from ccswitch_tui.policy import mask
from ccswitch_tui.profiles.edit_session import edit
from ccswitch_tui.profiles.schema import configured_tools
from ccswitch_tui.terminal_text import visible
from ccswitch_tui.tools.checker import check_name


def profile_dict(p: Profile) -> dict[str, Any]:
    """The stable JSON shape of a profile (no secrets: the key appears as its id only)."""
    return {
        "name": p.name,
        "description": p.description,
        "provider": {
            "name": p.provider.name,
            "base_url": p.provider.base_url,
            "key": p.provider.key,
            "website": p.provider.website,
        },
        "tools": list(p.tools),
        **{spec.name: (None if p.side(spec.name) is None else spec.side_dict(p.side(spec.name)))
           for spec in tools.load().specs()},
        "env": dict(p.env),
        "policy": {"inherit": list(p.inherit), "quiet": p.quiet,
                   "share": None if p.share is None else list(p.share)},
        "secrets": dict(getattr(p, "secrets", {})),
    }


def _key_presence(ctx: Context, refs: list[str]) -> tuple[dict[str, bool], str | None]:
    """Key presence for the refs, or ({}, reason) when the keyring cannot be asked."""
    return ctx.keys.presence(refs)


@click.command("list")
@json_option
@pass_ctx
def list_cmd(ctx: Context, as_json: bool) -> None:
    """List every profile: provider, base URL, tools served, key id and whether the key is present."""
    entries = ctx.store.entries()
    refs = [e.profile.key_id for e in entries if e.profile]
    present, keyring_error = _key_presence(ctx, refs) if refs else ({}, None)
    rows: list[dict[str, Any]] = []
    for e in entries:
        p = e.profile
        rows.append(
            {
                "name": e.name,
                "path": str(e.path),
                "ok": p is not None,
                "error": e.error,
                "provider": p.provider.name if p else None,
                "base_url": p.provider.base_url if p else None,
                "tools": list(configured_tools(p)) if p else [],
                "key_id": p.key_id if p else None,
                "key_present": present.get(p.key_id) if p else None,
                "description": p.description if p else None,
            }
        )
    if as_json:
        emit_json({"profiles": rows, "keyring_error": keyring_error})
        return
    if not rows:
        click.echo(f"no profiles in {ctx.store.root}; create one with `ccs new NAME --preset PRESET`")
        return

    def key_cell(r: dict[str, Any]) -> str:
        mark = {True: "yes", False: "MISSING", None: "?"}[r["key_present"]]
        return f"{r['key_id']} ({mark})"

    body = [
        [r["name"], r["provider"], r["base_url"], join(r["tools"]), key_cell(r)]
        if r["ok"]
        else [r["name"], "BROKEN", "-", "-", r["error"]]
        for r in rows
    ]
    click.echo(table(body, ["NAME", "PROVIDER", "BASE URL", "TOOLS", "KEY"]))
    if keyring_error:
        click.echo(visible(f"note: key presence unknown: {keyring_error}"), err=True)


@click.command("show")
@click.argument("profile")
@json_option
@pass_ctx
def show_cmd(ctx: Context, profile: str, as_json: bool) -> None:  # noqa: C901
    """Show one profile, with its key's mask and fingerprint (never the key)."""
    p = ctx.store.load(profile)
    key: dict[str, Any] = {"id": p.key_id, "present": None, "mask": None, "fingerprint": None, "error": None}
    try:
        value = ctx.keys.lookup(p.key_id)
        key["present"] = value is not None
        if value:

            key["mask"], key["fingerprint"] = mask(value), ctx.keys.fingerprint(value)
    except CcsError as exc:
        key["error"] = str(exc)
    data = profile_dict(p) | {"path": str(ctx.store.path_for(p.name)), "key": key}
    if as_json:
        emit_json(data)
        return
    lines = [f"{p.name}  ({data['path']})"]
    if p.description:
        lines.append(f"  {p.description}")
    lines.append(f"provider   {p.provider.name}  {p.provider.base_url}")
    if p.provider.website:
        lines.append(f"website    {p.provider.website}")
    if key["present"]:
        lines.append(f"key        {p.key_id}  {key['mask']}  {key['fingerprint']}")
    elif key["error"]:
        lines.append(f"key        {p.key_id}  (unknown: {key['error']})")
    else:
        how = f"export {p.provider.key_env_var}=… before running ccs" if p.provider.key_env_var \
            else f"`ccs key set {p.key_id}`"
        lines.append(f"key        {p.key_id}  MISSING — {how}")
    for spec in tools.load().specs():
        side = p.side(spec.name)
        if side is None:
            continue
        lines.append(f"{spec.name:<10} {spec.show(side)}")
        for env in spec.env_tables(side).values():
            lines += [f"           {k}={v}" for k, v in env.items()]
    for k, v in p.env.items():
        lines.append(f"env        {k}={v}")
    if p.inherit:
        lines.append(f"inherit    {' '.join(p.inherit)}")
    for k, ref in getattr(p, "secrets", {}).items():
        lines.append(f"secret     {k} from key {ref}")
    if p.quiet is not None or p.share is not None:
        share = "default" if p.share is None else (" ".join(p.share) or "nothing")
        quiet = "default" if p.quiet is None else str(p.quiet).lower()
        lines.append(f"policy     quiet={quiet}  share={share}")
    click.echo(visible("\n".join(lines)))


def _model_options(f: Any) -> Any:
    """`--NAME-model` for every client whose spec offers one, in registry order."""
    for spec in reversed(tools.load().clients()):
        if spec.model_option:
            f = click.option(f"--{spec.name}-model", f"{spec.name}_model", help=spec.model_option)(f)
    return f


_MODEL_EXAMPLE = next((f"{s.name}={s.model_example}" for s in tools.load().clients() if s.model_example),
                      "NAME=MODEL")


@click.command("new")
@click.argument("name")
@click.option("--preset", help="Start from a preset (see `ccs presets`).")
@click.option("--base-url", "base_urls", multiple=True, metavar="[TOOL=]URL",
              help="The provider's base URL (with a preset: every tool's), or TOOL=URL for one tool's. "
                   "Repeatable.")
@click.option("--key", "key_id", help='Key id in the keyring, or "env:VAR".')
@_model_options
@click.option("--model", "models", multiple=True, metavar="TOOL=MODEL",
              help=f"That tool's model (e.g. {_MODEL_EXAMPLE}); adds its table when missing. Repeatable.")
@pass_ctx
def new_cmd(ctx: Context, name: str, preset: str | None, base_urls: tuple[str, ...], key_id: str | None,
            models: tuple[str, ...], **tool_models: str | None) -> None:
    """Create a profile, from a preset or from a base URL, and say the URL each tool will use."""
    from ccswitch_tui.profiles.presets import new_profile  # lazy: tomlkit loads only when a profile is written

    check_name(name)
    chosen: dict[str, str] = {}
    for item in models:
        tool, sep, model = item.partition("=")
        if not sep or not model.strip():
            raise UsageError(f"--model {item!r}: write TOOL=MODEL, e.g. --model {_MODEL_EXAMPLE}")
        tools.load().get(tool)  # an unknown tool is one line naming the known ones
        chosen[tool] = model
    own = {s.name: m for s in tools.load().clients() if (m := tool_models.get(f"{s.name}_model"))}
    base_url, tool_urls = _base_urls(base_urls)
    new = new_profile(name, preset, base_url=base_url, key=key_id, tool_models=own, models=chosen,
                      tool_urls=tool_urls)
    p = ctx.store.save_text(name, new.text, create=True)
    click.echo(f"created {ctx.store.path_for(name)}")
    if base_url and preset:
        click.echo(f"--base-url {base_url} replaced the preset's URLs (the per-tool ones too)")
    if new.urls:
        click.echo("URLs each tool will use:")
        for line in new.urls:
            click.echo(visible(f"  {line}"))
    present, _error = _key_presence(ctx, [p.key_id])
    if p.key_id.startswith("env:"):
        if not present.get(p.key_id):
            click.echo(f"next: export {p.key_id[4:]} before launching")
    elif present.get(p.key_id):
        registry = ctx.registry
        served = "|".join(t for t in p.tools if registry.get(t).launchable) or registry.default_client().name
        click.echo(f"key {p.key_id} is already stored; launch with `ccs launch {name} {served}`")
    else:
        click.echo(f"next: store its key with `ccs key set {p.key_id}`")


def _base_urls(items: tuple[str, ...]) -> tuple[str | None, dict[str, str]]:
    """--base-url URL (one, for every tool) and --base-url TOOL=URL (one tool's; repeatable)."""
    common: str | None = None
    per_tool: dict[str, str] = {}
    for item in items:
        tool, sep, url = item.partition("=")
        if sep and re.fullmatch(r"[a-z][a-z0-9_-]*", tool):
            if not url.strip():
                raise UsageError(f"--base-url {item!r}: write TOOL=URL, e.g. --base-url "
                                 f"{tools.load().clients()[0].name}=https://host/api")
            tools.load().get(tool)  # an unknown tool is one line naming the known ones
            if tool in per_tool:
                raise UsageError(f"--base-url {tool}=… given twice; give each tool one URL")
            per_tool[tool] = url
        elif common is not None:
            raise UsageError(f"--base-url given twice ({common}, {item}); give one URL for every tool, "
                             "and TOOL=URL for one tool's")
        else:
            common = item
    return common, per_tool


@click.command("cp")
@click.argument("profile")
@click.argument("new_name")
@pass_ctx
def cp_cmd(ctx: Context, profile: str, new_name: str) -> None:
    """Copy a profile file under a new name (comments kept; the key id is shared)."""
    from ccswitch_tui.profiles.presets import copy_profile_text  # lazy: tomlkit loads only when a profile is written

    ctx.store.save_text(new_name, copy_profile_text(ctx.store, profile, new_name), create=True)
    click.echo(f"created {ctx.store.path_for(new_name)}")


@click.command("edit")
@click.argument("profile")
@pass_ctx
def edit_cmd(ctx: Context, profile: str) -> None:
    """Open a profile in $VISUAL / $EDITOR; an invalid result is reported and the old file kept.

    When the file changed on disk while the editor was open, nothing is saved: the edited copy is
    kept and its path printed."""

    ctx.store.path_for(profile)
    editor = ctx.environ.get("VISUAL") or ctx.environ.get("EDITOR") or "vi"
    try:
        editor_argv = shlex.split(editor)
    except ValueError as exc:
        raise UsageError(f"cannot parse the editor command {editor!r} ({exc}); fix $VISUAL / $EDITOR") from None
    if not editor_argv:
        raise UsageError("the editor command is blank; set $VISUAL or $EDITOR to your editor's command")
    click.echo(edit(ctx.store, profile, editor_argv, editor))


@click.command("rm")
@click.argument("profile")
@click.option("--yes", "-y", is_flag=True, help="Do not ask.")
@click.option("--keep-state", is_flag=True, help="Keep the profile's tool state (sessions, history).")
@click.option("--with-key", is_flag=True,
              help="Also remove its key from the keyring (kept while another profile names the same key id).")
@pass_ctx
def rm_cmd(ctx: Context, profile: str, yes: bool, keep_state: bool, with_key: bool) -> None:
    """Delete a profile file and its tool state; its key stays in the keyring unless --with-key."""

    removal = plan_removal(ctx.store, ctx.paths, profile, keep_state)
    confirm_or_refuse(visible(removal.question(with_key)), yes)
    for line in carry_out(ctx.store, ctx.paths, ctx.keys if with_key else None, removal, with_key):
        click.echo(visible(line))


@click.command("gc")
@click.option("--yes", "-y", is_flag=True, help="Do not ask.")
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
@pass_ctx
def gc_cmd(ctx: Context, yes: bool, dry_run: bool) -> None:
    """Remove the tool state (sessions, history, downloads) of profiles that no longer exist."""

    found = orphans(ctx.paths, {e.name for e in ctx.store.entries()})
    if not found:
        click.echo("no state of removed profiles")
        return
    for s in found:
        click.echo(visible(f"{s.path}  {s.size_text}  (profile {s.profile!r} does not exist)"))
    if dry_run:
        return
    confirm_or_refuse(f"remove the state of {len(found)} removed profile(s)?", yes)
    for s in found:
        remove(ctx.paths, s)
        click.echo(f"deleted {s.path}")


@click.command("presets")
@json_option
def presets_cmd(as_json: bool) -> None:
    """List the presets shipped with ccs."""
    from ccswitch_tui.profiles.presets import list_presets  # lazy: tomlkit loads only when a profile is written

    presets = list_presets()
    if as_json:
        emit_json({"presets": [
            {"name": pr.name, "description": pr.profile.description, "provider": pr.profile.provider.name,
             "website": pr.profile.provider.website, "base_urls": pr.profile.base_urls(),
             "tools": list(configured_tools(pr.profile)), "key_id": pr.profile.key_id}
            for pr in presets]})
        return
    click.echo(table([[pr.name, pr.profile.provider.name, join(configured_tools(pr.profile)), pr.profile.description]
                      for pr in presets], ["PRESET", "PROVIDER", "TOOLS", "DESCRIPTION"]))
