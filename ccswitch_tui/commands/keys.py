"""`ccs key set|rm|show|list|salt`: keys in the OS keyring, never from argv, never printed; the salt of
their fingerprints."""

from __future__ import annotations

import sys
from typing import Any

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
from ccswitch_tui.keys.salt import SHARED_SALT_VAR, current_salt, remove_shared_salt, store_shared_salt
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
    rows: list[dict[str, Any]] = [{"id": i, "present": present.get(i, False), "profiles": users.get(i, [])}
                                  for i in ids]
    if as_json:
        emit_json({"keys": rows})
        return
    if not rows:
        click.echo("no keys; store one with `ccs key set ID`")
        return
    click.echo(table([[r["id"], "yes" if r["present"] else "MISSING", ",".join(r["profiles"]) or "-"]
                      for r in rows], ["KEY ID", "PRESENT", "PROFILES"]))


@key_group.group("salt", invoke_without_command=True)
@json_option
@click.pass_context
def salt_group(click_ctx: click.Context, as_json: bool) -> None:
    """The salt key fingerprints are taken under: this install's own, or a salt shared between machines
    (CCS_FINGERPRINT_SALT, else `ccs key salt set`) so that the same key has one fingerprint on each."""
    if click_ctx.invoked_subcommand is not None:
        return
    ctx = click_ctx.find_object(Context) or Context()
    salt = current_salt(ctx.paths, ctx.environ)
    if as_json:
        emit_json({"id": salt.id, "source": salt.source, "shared": salt.shared})
        return
    click.echo(salt.describe())


@salt_group.command("set", context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@pass_ctx
def salt_set(ctx: Context) -> None:
    """Store a shared salt (16+ characters; hex is read as bytes): from stdin when it is not a terminal,
    else a hidden prompt. Give every machine of a round the same one."""
    if click.get_current_context().args:
        raise UsageError("`ccs key salt set` takes no salt on the command line (argv is visible to other "
                         "processes and kept in shell history); pipe it on stdin or type it at the prompt")
    if stdin_is_tty():
        text = click.prompt("shared salt", hide_input=True, confirmation_prompt=True)
    else:
        stream = getattr(sys.stdin, "buffer", None)
        try:
            text = stream.read().decode("utf-8") if stream is not None else sys.stdin.read()
        except UnicodeDecodeError:
            raise UsageError("the shared salt is not valid UTF-8 text; give it as text") from None
    salt = store_shared_salt(ctx.paths, text)
    click.echo(f"stored: fingerprints are taken under {salt.describe()}")
    if ctx.environ.get(SHARED_SALT_VAR, "").strip():
        click.echo(f"ccs: note: {SHARED_SALT_VAR} is set in this shell and is used before the stored salt", err=True)


@salt_group.command("rm")
@pass_ctx
def salt_rm(ctx: Context) -> None:
    """Forget the stored shared salt: fingerprints are taken under this install's own salt again."""
    if not remove_shared_salt(ctx.paths):
        raise UsageError("no shared salt is stored; see `ccs key salt`")
    now = current_salt(ctx.paths, ctx.environ)
    click.echo(f"removed the shared salt; fingerprints are taken under {now.describe()}")
