"""`ccs key set|rm|show|list`: keys in the OS keyring, never from argv, never printed."""

from __future__ import annotations

import sys

import click

from ccswitch_tui.commands.common import (
    Context,
    confirm_or_refuse,
    emit_json,
    json_option,
    pass_ctx,
    stdin_is_tty,
    table,
)
from ccswitch_tui.errors import UsageError
from ccswitch_tui.keys.keyring import has_control_chars
from ccswitch_tui.policy import mask
from ccswitch_tui.tools.checker import check_key_id


@click.group("key")
def key_group() -> None:
    """Keys in the OS keyring (service ccswitch-tui, username = key id)."""


def _read_secret(key_id: str) -> str:
    if stdin_is_tty():
        value = click.prompt(f"key for {key_id}", hide_input=True, confirmation_prompt=True)
    else:
        stream = getattr(sys.stdin, "buffer", None)
        try:
            value = stream.read().decode("utf-8") if stream is not None else sys.stdin.read()
        except UnicodeDecodeError:
            raise UsageError(f"the key for {key_id!r} is not valid UTF-8 text; give the key as text") from None
    value = value.strip()
    if not value:
        raise UsageError(f"no key given for {key_id!r}: pipe it on stdin or type it at the prompt")
    if "\n" in value:
        raise UsageError(f"the key for {key_id!r} spans several lines; give exactly one line on stdin")
    if has_control_chars(value):
        raise UsageError(f"the key for {key_id!r} holds control characters (a NUL, tab or escape); "
                         "an environment variable cannot carry it: give the key as plain text")
    return value


@key_group.command("set", context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("key_id")
@pass_ctx
def key_set(ctx: Context, key_id: str) -> None:
    """Store a key: read from stdin when it is not a terminal, else from a hidden prompt."""
    if click.get_current_context().args:
        # anything after the id is probably the key itself: refuse without echoing it
        raise UsageError(
            f"`ccs key set {key_id}` takes no key on the command line (argv is visible to other processes "
            "and kept in shell history); pipe it on stdin or type it at the prompt"
        )
    check_key_id(key_id)
    value = _read_secret(key_id)
    ctx.keys.set(key_id, value)
    click.echo(f"stored {key_id}  {mask(value)}  {ctx.keys.fingerprint(value)}")


@key_group.command("rm")
@click.argument("key_id")
@click.option("--yes", "-y", is_flag=True, help="Do not ask.")
@pass_ctx
def key_rm(ctx: Context, key_id: str, yes: bool) -> None:
    """Remove a key from the keyring."""
    check_key_id(key_id)
    confirm_or_refuse(f"remove key {key_id!r} from the keyring?", yes)
    if ctx.keys.delete(key_id):
        click.echo(f"removed {key_id}")
    else:
        raise UsageError(f"no key stored for id {key_id!r}; see `ccs key list`")


@key_group.command("show")
@click.argument("key_id")
@json_option
@pass_ctx
def key_show(ctx: Context, key_id: str, as_json: bool) -> None:
    """Show a key's mask and fingerprint (never the key)."""
    check_key_id(key_id)
    value = ctx.keys.get(key_id)
    if value is None:
        raise UsageError(f"no key stored for id {key_id!r}; store it with `ccs key set {key_id}`")
    data = {"id": key_id, "mask": mask(value), "fingerprint": ctx.keys.fingerprint(value)}
    if as_json:
        emit_json(data)
    else:
        click.echo(f"{key_id}  {data['mask']}  {data['fingerprint']}")


@key_group.command("list")
@json_option
@pass_ctx
def key_list(ctx: Context, as_json: bool) -> None:
    """Key ids ccs stored or profiles name, whether each is present, and which profiles use it."""
    users: dict[str, list[str]] = {}
    for e in ctx.store.entries():
        if e.profile is None:
            continue
        for ref in (e.profile.key_id, *getattr(e.profile, "secrets", {}).values()):  # [secrets] ids too
            if not ref.startswith("env:") and e.name not in users.get(ref, []):
                users.setdefault(ref, []).append(e.name)
    ids = sorted(set(ctx.keys.ids()) | set(users))
    present = ctx.keys.present(ids) if ids else {}
    rows = [{"id": i, "present": present.get(i, False), "profiles": users.get(i, [])} for i in ids]
    if as_json:
        emit_json({"keys": rows})
        return
    if not rows:
        click.echo("no keys; store one with `ccs key set ID`")
        return
    click.echo(table([[r["id"], "yes" if r["present"] else "MISSING", ",".join(r["profiles"]) or "-"]
                      for r in rows], ["KEY ID", "PRESENT", "PROFILES"]))
