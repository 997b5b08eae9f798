"""What Gemini CLI and the clients forked from it (Qwen Code) share: JSON settings layers read by
dotted keys (comments allowed, as their loaders strip them), ``.env`` files read the way they read
them, a user layer whose keys ccs owns merged into what the client or the user wrote there, the
system layer that beats every other one, and doctor's table of the layers a client started by hand
would follow.

Client modules never import each other; both specs import this helper instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ccswitch_tui.errors import UsageError
from ccswitch_tui.model import WARN, Finding, Refusal
from ccswitch_tui.safe_read import decode_error_line, loads_json, read_text, strip_jsonc
from ccswitch_tui.tools.spec import DoctorPart

# How a layer's value is shown (``key``, raw value → what doctor and messages print): no secrets
Show = Callable[[str, Any], Any]


def dig(data: Any, dotted: str) -> Any:
    """``data["a"]["b"]`` for ``"a.b"``; None when a part is missing or not an object."""
    for part in dotted.split("."):
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


def strip_comments(text: str) -> str:
    """JSON with ``//`` and ``/* */`` comments as plain JSON (strings kept), as the clients read it."""
    return strip_jsonc(text, trailing_commas=False)


def load_settings(path: Path) -> Any:
    """A settings file's JSON value; None when absent. Raises OSError, ValueError (not JSON) or
    UnicodeDecodeError."""
    try:
        return loads_json(strip_comments(read_text(path)))
    except (FileNotFoundError, NotADirectoryError):
        return None


def read_layer(path: Path, keys: Sequence[str], show: Show | None = None
               ) -> tuple[dict[str, Any] | None, str | None]:
    """(the routing ``keys`` the file sets, None) or (None, why it cannot be read); (None, None)
    when absent. ``show`` turns each value into what may be printed, or None for a value that does
    not route (left out)."""
    try:
        data = load_settings(path)
    except UnicodeDecodeError as exc:
        return None, f"cannot read: {decode_error_line(exc)}"
    except (OSError, ValueError) as exc:
        return None, f"cannot read: {exc}"
    if data is None:
        return None, None
    found = {k: v for k in keys if (v := dig(data, k)) is not None}
    if show is not None:
        found = {k: shown for k, v in found.items() if (shown := show(k, v)) is not None}
    return found, None


def read_dotenv(path: Path, wanted: Callable[[str], bool]) -> dict[str, str]:
    """The variables a ``.env`` file sets (``NAME=value``, ``export NAME=value``, quotes removed)
    that ``wanted`` picks; {} when it is absent or unreadable."""
    try:
        text = read_text(path)
    except (OSError, UnicodeDecodeError):
        return {}
    out = {}
    for line in text.splitlines():
        name, sep, value = line.strip().removeprefix("export ").partition("=")
        name = name.strip()
        if sep and name and not name.startswith("#") and wanted(name):
            out[name] = value.strip().strip("'\"")
    return out


def merge(current: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """``current`` with ``values`` set, objects merged key by key (lists and scalars replaced)."""
    out = dict(current)
    for k, v in values.items():
        out[k] = merge(out[k] if isinstance(out.get(k), dict) else {}, v) if isinstance(v, Mapping) else v
    return out


def _drop(data: dict[str, Any], dotted: str) -> None:
    head, _, rest = dotted.partition(".")
    if not rest:
        data.pop(head, None)
    elif isinstance(data.get(head), dict):
        data[head] = dict(data[head])
        _drop(data[head], rest)


def owned_settings(path: Path, owned: Mapping[str, Any], drop: Iterable[str] = (),
                   drop_env: Callable[[str], bool] | None = None, base: Path | None = None) -> str:
    """A layer ccs writes at ``path``: the settings there (or in ``base``) with ccs's keys (``owned``)
    set, the ``drop`` keys (dotted) and the variables of its ``env`` table that ``drop_env`` picks
    removed, whatever the client or the user wrote kept. A file ccs cannot read is one clear line."""
    path = base or path
    try:
        data = load_settings(path)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read ({exc}); remove it (ccs writes a new one)") from None
    if not isinstance(data, dict):
        data = {}
    for dotted in drop:
        _drop(data, dotted)
    if drop_env is not None and isinstance(data.get("env"), dict):
        data["env"] = {k: v for k, v in data["env"].items() if not drop_env(k)}
    for table, values in owned.items():
        if isinstance(values, Mapping):
            current = data.get(table) if isinstance(data.get(table), dict) else {}
            data[table] = merge(current, values)
        else:
            data[table] = values
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def system_refusal(label: str, path: Path, keys: Iterable[str], beaten: str = "every other layer") -> Refusal:
    """A system layer that sets routing keys: the launch is refused, as Claude Code's managed layer is."""
    return Refusal(
        "settings-override",
        f"the system {label} settings {path} set {', '.join(keys)}, which beat {beaten}; "
        "ccs cannot override them",
        ("--force to launch anyway (recorded in the manifest)",
         "ask whoever manages this machine to remove them"),
        flags=("force",))


@dataclass(frozen=True)
class Layer:
    """One settings file of a client started by hand: its kind (system, user, project …), where it is,
    and what its routing keys do (severity, the end of the finding's sentence)."""

    kind: str
    path: Path
    severity: str
    effect: str
    keys: tuple[str, ...]
    show: Show | None = None


def layers_part(section: str, title: str, label: str, cwd: Path, layers: Sequence[Layer]) -> DoctorPart:
    """doctor's section for a client's settings layers: one row and one text line per layer, a
    finding per routing key a layer sets, and one per file that cannot be read."""
    rows: list[dict[str, Any]] = []
    part = DoctorPart(section, rows, lines=[title])
    for layer in layers:
        keys, error = read_layer(layer.path, layer.keys, layer.show)
        rows.append({"kind": layer.kind, "path": str(layer.path), "exists": keys is not None or error is not None,
                     "error": error, "routing": keys or {}})
        if error:
            part.findings.append(Finding("settings-invalid", WARN, f"{layer.kind} settings layer {error}; "
                                         f"{label} may refuse or ignore it; fix the file", path=str(layer.path)))
        where = "in " + str(cwd) if layer.kind == "project" else "directly"
        for k, v in (keys or {}).items():
            part.findings.append(Finding(
                "settings-override", layer.severity,
                f"{layer.kind} {label} settings set {k}={v}, which a {label} started {where} follows; {layer.effect}",
                path=str(layer.path), variable=k))
        state = "absent" if keys is None and error is None else (error or (
            ", ".join(f"{k}={v}" for k, v in (keys or {}).items()) or "no routing keys"))
        part.lines.append(f"  {layer.kind:<8} {layer.path}: {state}")
    return part


def dotenv_findings(part: DoctorPart, paths: Iterable[Path], wanted: Callable[[str], bool], effect: str,
                    severity: str = WARN) -> None:
    """A finding per variable of ``paths`` (``.env`` files) that ``wanted`` picks: ``effect`` says
    who takes it and what ccs does about it."""
    for path in paths:
        for name in read_dotenv(path, wanted):
            part.findings.append(Finding("settings-override", severity, f"{path} sets {name}, {effect}",
                                         path=str(path), variable=name))

