"""The user's own setup shared with every profile: ``[policy] share``.

Each profile runs with its own ``CLAUDE_CONFIG_DIR`` / ``CODEX_HOME``, so without this a profile
starts bare: onboarding again, no MCP servers, no memory file, commands, agents or skills, and a
fresh ~424 MB Codex package download. The pieces below come from the user's real ``~/.claude``,
``~/.claude.json`` and ``~/.codex``; none of them can carry routing or credentials — settings
files (their ``env`` table, ``apiKeyHelper``), ``auth.json`` and ``.credentials.json`` are never
shared, and an MCP server whose ``env`` sets a routing variable is left out.

Directories and memory files are shared by link (made at launch, only where the profile has no
file of its own); MCP servers and onboarding state are copied into the profile's own files at each
launch (the user's entry wins over a profile's entry of the same name).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ccswitch_tui.paths import ensure_private_dir
from ccswitch_tui.policy.families import Families
from ccswitch_tui.safe_read import decode_error_line, loads_json, read_text
from ccswitch_tui.toml_cache import TomlSyntaxError, TomlTooDeep, loads
from ccswitch_tui.valueclass import valueclass

PIECES = ("mcp", "memory", "commands", "agents", "skills", "onboarding", "packages")
DEFAULT_PIECES = PIECES  # every piece is harmless: share them all unless the profile says otherwise

# piece → names linked from the user's folder into the profile's
CLAUDE_LINKS = {"memory": ("CLAUDE.md",), "commands": ("commands",), "agents": ("agents",), "skills": ("skills",)}
CODEX_LINKS = {"memory": ("AGENTS.md",), "commands": ("prompts",), "skills": ("skills",)}
# the onboarding and display state of ~/.claude.json; never accounts, keys or key approvals
CLAUDE_ONBOARDING = ("hasCompletedOnboarding", "lastOnboardingVersion", "theme", "editorMode")
PACKAGES = "packages"


@valueclass(frozen=True)
class Shared:
    """One shared piece as a launch applies it."""

    piece: str
    source: Path
    target: Path
    how: str  # "link" (made at launch) | "copy" (merged into the profile's own file)
    detail: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"piece": self.piece, "source": str(self.source), "target": str(self.target), "how": self.how,
                "detail": self.detail}


def user_home(parent_env: Mapping[str, str]) -> Path:
    return Path(parent_env.get("HOME") or Path.home())


def _linkable(source: Path, target: Path) -> bool:
    """Share ``source`` at ``target`` only if the profile has nothing of its own there."""
    return source.exists() and (not os.path.lexists(target) or target.is_symlink())


def links(pieces: Iterable[str], table: Mapping[str, tuple[str, ...]], source_dir: Path,
          target_dir: Path) -> list[Shared]:
    out = []
    for piece in pieces:
        for name in table.get(piece, ()):
            source, target = source_dir / name, target_dir / name
            if _linkable(source, target):
                out.append(Shared(piece, source, target, "link"))
    return out


def packages_link(pieces: Iterable[str], user_codex: Path, shared_dir: Path, codex_home: Path) -> list[Shared]:
    """Codex's downloaded packages: the user's own when there are some, else one folder that every
    profile shares (so the download happens once)."""
    if "packages" not in pieces:
        return []
    source = user_codex / PACKAGES if (user_codex / PACKAGES).is_dir() else shared_dir / "codex-packages"
    target = codex_home / PACKAGES
    if os.path.lexists(target) and not target.is_symlink():
        return []
    return [Shared("packages", source, target, "link")]


def safe_mcp_servers(servers: Any, families: Families) -> tuple[dict[str, Any], list[str]]:
    """MCP server entries that set no routing variable, and the names left out."""
    keep: dict[str, Any] = {}
    left_out: list[str] = []
    if not isinstance(servers, Mapping):
        return keep, left_out
    for name, entry in servers.items():
        env = entry.get("env") if isinstance(entry, Mapping) else None
        if isinstance(env, Mapping) and any(families.routing_family(str(k)) for k in env):
            left_out.append(str(name))
            continue
        keep[str(name)] = entry
    return keep, left_out


def _unreadable(exc: Exception) -> str:
    """Why a file could not be read or parsed, for a warning line."""
    if isinstance(exc, UnicodeDecodeError):
        return decode_error_line(exc)
    if isinstance(exc, (RecursionError, TomlTooDeep)):
        return "nested too deeply for ccs to read"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc)


def _read_json(path: Path) -> tuple[Any, str | None]:
    """(the parsed file, None); (None, None) when it does not exist; (None, why) when it cannot be
    read (a FIFO, a device, too large, not UTF-8, not JSON, nested too deeply)."""
    try:
        return loads_json(read_text(path)), None
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as exc:
        return None, _unreadable(exc)


def claude_state(pieces: Iterable[str], home: Path, config_dir: Path, families: Families,  # noqa: C901
                 require: Mapping[str, Any] | None = None) -> tuple[str | None, list[Shared], list[str]]:
    """The profile's ``.claude.json`` with the user's MCP servers and onboarding state copied in, and
    the ``require``d keys set over them: (new content or None when nothing changes, what is shared,
    warnings)."""
    pieces = set(pieces) & {"mcp", "onboarding"}
    require = dict(require or {})
    if not pieces and not require:
        return None, [], []
    source, target = home / ".claude.json", config_dir / ".claude.json"
    warnings: list[str] = []
    user: Any = None
    if pieces:
        user, why = _read_json(source)
        if why:
            warnings.append(f"{source}: cannot read ({why}); its MCP servers and onboarding state are not shared")
    if not isinstance(user, dict):
        user, pieces = {}, set()
        if not require:
            return None, [], warnings
    existing_text = None
    try:
        existing_text = read_text(target)
        mine = loads_json(existing_text)
    except FileNotFoundError:
        mine = {}
    except (OSError, ValueError) as exc:
        return None, [], [*warnings, f"{target}: cannot read ({_unreadable(exc)}); the user's MCP servers and "
                          "onboarding state are not copied into it (fix or remove it)"]
    if not isinstance(mine, dict):
        return None, [], warnings
    merged = dict(mine)
    shared: list[Shared] = []
    if "mcp" in pieces:
        servers, left_out = safe_mcp_servers(user.get("mcpServers"), families)
        if left_out:
            warnings.append(f"MCP servers {', '.join(left_out)} in {source} set routing variables; not shared")
        if servers:
            own = got if isinstance(got := mine.get("mcpServers"), dict) else {}
            merged["mcpServers"] = {**own, **servers}
            shared.append(Shared("mcp", source, target, "copy", ", ".join(sorted(servers))))
    if "onboarding" in pieces:
        keys = [k for k in CLAUDE_ONBOARDING if k in user]
        if keys:
            merged.update({k: user[k] for k in keys})
            shared.append(Shared("onboarding", source, target, "copy", ", ".join(keys)))
    merged.update(require)
    if merged == mine and existing_text is not None:
        return None, shared, warnings
    return json.dumps(merged, indent=2) + "\n", shared, warnings


def codex_mcp(pieces: Iterable[str], user_codex: Path, codex_home: Path,
              families: Families) -> tuple[dict[str, Any], list[Shared], list[str]]:
    """The ``[mcp_servers]`` of the user's ``~/.codex/config.toml`` that a profile's config gets."""
    if "mcp" not in pieces:
        return {}, [], []
    source = user_codex / "config.toml"
    try:

        data = loads(read_text(source))  # not cached: the user's own file may hold secrets
    except FileNotFoundError:
        return {}, [], []
    except TomlSyntaxError as exc:
        return {}, [], [f"{source} is not valid TOML ({exc}); its MCP servers are not shared"]
    except (OSError, ValueError, RecursionError, TomlTooDeep) as exc:
        return {}, [], [f"{source}: cannot read ({_unreadable(exc)}); its MCP servers are not shared"]
    servers, left_out = safe_mcp_servers(data.get("mcp_servers"), families)
    warnings = [f"MCP servers {', '.join(left_out)} in {source} set routing variables; not shared"] if left_out else []
    target = codex_home / "config.toml"
    shared = [Shared("mcp", source, target, "copy", ", ".join(sorted(servers)))] if servers else []
    return servers, shared, warnings


def apply_links(shared: Iterable[Mapping[str, str]]) -> list[str]:
    """Make the plan's links (at launch); the ones that could not be made, as warnings. A profile's
    own file is never replaced: only a missing target, or a link pointing elsewhere, becomes a link
    to the user's piece."""

    problems = []
    for item in shared:
        if item.get("how") != "link":
            continue
        source, target = Path(item["source"]), Path(item["target"])
        try:
            if item.get("piece") == "packages" and not source.exists():
                ensure_private_dir(source)
            if target.is_symlink():
                if os.readlink(target) == str(source):
                    continue
                target.unlink()
            elif os.path.lexists(target):
                continue
            os.symlink(source, target)
        except OSError as exc:
            problems.append(f"cannot share {item.get('piece')} ({source} at {target}): {exc.strerror or exc}")
    return problems


def describe(shared: Iterable[Mapping[str, str]]) -> list[str]:
    """One line per shared piece, for `ccs env` and the TUI."""
    out = []
    for s in shared:
        detail = f" ({s['detail']})" if s.get("detail") else ""
        verb = "linked from" if s["how"] == "link" else "copied from"
        out.append(f"{s['piece']}{detail}: {verb} {s['source']}")
    return out
