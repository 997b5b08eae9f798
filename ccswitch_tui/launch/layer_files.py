"""Where a declared layer is and what it says (tools/layers.py declares them; launch/layers.py judges
them): the paths a layer has for a client with a given environment, each file read and parsed as its
format says (a file the size or shape a hostile repository might give it read within bounds: safe_read
refuses FIFOs and devices, JSON and TOML too deep, YAML without its aliases' expansion in messages), and
the keys in it that the declaration names."""

from __future__ import annotations

import contextlib
import contextvars
import errno
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ccswitch_tui import policy
from ccswitch_tui.model import LaunchPlan
from ccswitch_tui.policy.families import Families
from ccswitch_tui.policy.redact import redact_text
from ccswitch_tui.safe_read import decode_error_line, loads_json, read_text, strip_jsonc, too_deep_toml
from ccswitch_tui.toml_cache import TomlSyntaxError, TomlTooDeep, loads
from ccswitch_tui.tools.layers import Key, Layer, Place, git_root_of, project_dirs
from ccswitch_tui.valueclass import field, valueclass

_ARGV_OPTION = re.compile(r"--([a-z][a-z0-9-]*)")


@valueclass
class Seen:
    """One file (or variable, or the argv) of a layer: the routing keys it sets, or why it cannot be read."""

    layer: Layer
    where: str
    keys: dict[str, Any] = field(default_factory=dict)  # concrete key → value
    decl: dict[str, Key] = field(default_factory=dict)  # concrete key → the declaration that found it
    error: str | None = None
    data: Any = None
    text: str = ""


# --- where a layer is -------------------------------------------------------------------------------

def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or os.path.expanduser("~"))


def _expand(path: str, env: Mapping[str, str]) -> Path:
    return _home(env) / path[2:] if path.startswith("~/") else (_home(env) if path == "~" else Path(path))


def _files(folder: Path, names: Sequence[str]) -> list[Path]:
    out: list[Path] = []
    for name in names:
        if "*" in name:
            out += sorted(folder.glob(name)) if folder.is_dir() else []
        else:
            out.append(folder / name)
    return out


def locate(place: Place, env: Mapping[str, str], cwd: Path, ccs_env: Mapping[str, str],  # noqa: C901
           state_dir: Path | None) -> list[str]:
    """The paths (or ``$VAR`` for a variable's content, ``argv``) a layer has, highest precedence first.
    ``env`` is the environment of the client the question is about; ``ccs_env`` ccs's own (test paths)."""
    root = place.root
    if root == "home":
        return [str(p) for p in _files(_home(env), place.files)]
    if root == "cwd":
        return [str(p) for p in _files(cwd, place.files)]
    if root == "git-root":
        top = git_root_of(cwd)
        return [str(p) for p in _files(top, place.files)] if top else []
    if root == "project":
        out: list[str] = []
        folders = project_dirs(cwd, place.stop, _home(env))
        for folder in reversed(folders) if place.root_first else folders:
            found = _files(folder, place.files)
            if place.first:
                present = [p for p in found if p.is_file()]
                if present:
                    return [str(present[0])]
                continue
            out += [str(p) for p in found]
        return out
    if root == "absolute":
        return [str(p) for p in _absolute(place, env, ccs_env)]
    if root == "folder":
        base = env.get(place.var or "") or place.default
        if not base:
            return []
        return [str(p) for p in _files(_expand(base, env), place.files)]
    if root == "file-var":
        return [env[place.var]] if place.var and env.get(place.var) else []
    if root == "content-var":
        return [f"${place.var}"] if place.var and env.get(place.var) else []
    if root == "state":
        return [str(p) for p in _files(state_dir, place.files)] if state_dir else []
    return ["argv"]


def _absolute(place: Place, env: Mapping[str, str], ccs_env: Mapping[str, str]) -> list[Path]:
    files = [Path(f) for f in place.files]
    if place.test_var and ccs_env.get(place.test_var):
        moved = Path(ccs_env[place.test_var])
        if place.sibling:
            return [moved.parent / f.name for f in files]
        return [moved / f.name for f in files] if len(files) > 1 else [moved]
    if place.var and env.get(place.var):
        return [Path(env[place.var])]
    alt = dict(place.platforms).get(sys.platform)
    return [Path(alt)] if alt and len(files) == 1 else files


# --- what a layer says ------------------------------------------------------------------------------

# the files read during the current one_look, when inside one (each thread has its own context: a
# contextvar is the thread-local that costs the launch path no threading module)
_LOOK: contextvars.ContextVar[dict[tuple[object, ...], object] | None] = contextvars.ContextVar("ccs_layer_look",
                                                                                           default=None)


@contextlib.contextmanager
def one_look() -> Iterator[None]:
    """Within the block (in this thread), each layer file is read and parsed once: the plans judged
    together (the TUI's marks for every profile) see one state of the files and pay for it once."""
    if _LOOK.get() is not None:
        yield
        return
    token = _LOOK.set({})
    try:
        yield
    finally:
        _LOOK.reset(token)


_ABSENT = object()


def _once(key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
    """``compute()``, or inside ``one_look`` what it gave the first time for ``key`` (a file that is not
    there is remembered too; any other error is met again)."""
    seen = _LOOK.get()
    if seen is None:
        return compute()
    if key not in seen:
        try:
            seen[key] = compute()
        except FileNotFoundError:
            seen[key] = _ABSENT
    value = seen[key]
    if value is _ABSENT:  # a new error each time: one raised again would keep the frames of every raise
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), key[-1])
    return value

def parse(fmt: str, text: str, where: str, cache: Path | None = None) -> Any:
    """A layer's text as data; raises ValueError with one line on a syntax error."""
    if fmt == "json":
        return loads_json(text)
    if fmt == "jsonc":
        return loads_json(strip_jsonc(text))
    if fmt == "toml":
        try:  # looked up only: ccs caches the texts it writes itself when it writes them (toml_cache.py)
            return loads(text, cache, store=False)
        except TomlTooDeep:
            raise ValueError(f"{where}:{too_deep_toml(text)}") from None
        except TomlSyntaxError as exc:
            raise ValueError(str(exc)) from None
    if fmt == "yaml":
        import yaml  # lazy: only Aider's files are YAML

        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ValueError(" ".join(str(exc).split())) from None
    return dotenv(text)


def dotenv(text: str) -> dict[str, str]:
    """``NAME=value`` lines (``export NAME=value``, quotes removed), as the clients' .env readers take them."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, value = line.strip().removeprefix("export ").partition("=")
        name = name.strip()
        if sep and name and not name.startswith("#"):
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            out[name] = value
    return out


def argv_keys(argv: Sequence[str], option: str | None) -> dict[str, str]:
    """The keys a plan's argv sets: ``-c key=value`` pairs for ``option="-c"``, else ``--name value``."""
    out: dict[str, str] = {}
    args = list(argv[1:])
    for i, a in enumerate(args[:-1]):
        nxt = args[i + 1]
        if option is not None and a == option:
            key, sep, value = nxt.partition("=")
            if sep:
                out[key.strip()] = value
        elif option is None and (m := _ARGV_OPTION.fullmatch(a)) and not nxt.startswith("--"):
            out[m.group(1)] = nxt
    return out


def by_name(data: Any) -> Any:
    if isinstance(data, list) and data and all(isinstance(x, dict) and isinstance(x.get("name"), str) for x in data):
        return {x["name"]: x for x in data}
    return data


def _walk(data: Any, parts: Sequence[str]) -> Iterator[tuple[str, Any]]:
    if not parts:
        yield "", data
        return
    data = by_name(data)
    if not isinstance(data, dict):
        return
    head, rest = parts[0], parts[1:]
    names = [k for k in data if isinstance(k, str)] if head == "*" else ([head] if head in data else [])
    for name in names:
        for sub, value in _walk(data[name], rest):
            yield (f"{name}.{sub}" if sub else name), value


def routing(layer: Layer, data: Any, families: Families) -> dict[str, tuple[Any, Key]]:
    """The concrete keys of ``data`` that the layer declares, with the declaration that found each
    (the first that matches wins)."""
    out: dict[str, tuple[Any, Key]] = {}
    for key in layer.keys:
        for concrete, value in _walk(data, key.path.split(".")):
            if concrete in out or value is None:
                continue
            if key.path.split(".")[-1] == "*" and (layer.format == "dotenv" or key.role == "env"):
                name = concrete.rsplit(".", 1)[-1]
                if not (re.fullmatch(key.names, name) if key.names else families.steers(name)):
                    continue
            if key.only and value not in key.only:
                continue
            out[concrete] = (value, key)
    return out


def _seen(layer: Layer, where: str, data: Any, families: Families, text: str = "") -> Seen:
    found = routing(layer, data, families)
    return Seen(layer, where, {k: v for k, (v, _) in found.items()}, {k: d for k, (_, d) in found.items()},
                data=data, text=text)


def read(layer: Layer, where: str, env: Mapping[str, str], families: Families,
         plan: LaunchPlan | None = None, cache: Path | None = None) -> Seen | None:
    """One place of a layer: None when there is nothing there. A ccs layer's file comes from the plan.
    ``families``: which variables of an env table route (the registry's); ``cache``: where parsed
    TOML texts are kept (toml_cache.py)."""
    if where == "argv":
        if plan is None:
            return None
        return _seen(layer, where, argv_keys(plan.argv, layer.place.option), families)
    text: str | None
    if where.startswith("$"):
        text = env.get(where[1:], "")
    else:
        text = next((f.content for f in plan.files if str(f.path) == where), None) if plan is not None else None
        if text is None:
            try:
                text = _once(("text", where), lambda: read_text(where))
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                return None
            except UnicodeDecodeError as exc:
                return Seen(layer, where, error=f"cannot read: {decode_error_line(exc)}")
            except OSError as exc:
                return Seen(layer, where, error=f"cannot read: {exc.strerror or exc}")
    try:
        data = _once(("data", layer.format, where, text), lambda: parse(layer.format, text, where, cache))
    except (ValueError, RecursionError) as exc:
        return Seen(layer, where, error=f"not valid {layer.format.upper()}: {exc}", text=text)
    return _seen(layer, where, data, families, text)


def _brief(value: Any, budget: list[int]) -> Any:
    """``value`` cut to at most ``budget[0]`` nodes."""
    budget[0] -= 1
    if budget[0] < 0:
        return "…"
    if isinstance(value, dict):
        return {str(k): _brief(v, budget) for k, v in list(value.items())[:20]}
    if isinstance(value, list):
        return [_brief(v, budget) for v in value[:20]]
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)


def shown(key: str, value: Any) -> str:
    """A layer's value as messages print it: credentials masked, URLs without their passwords."""
    name = key.rsplit(".", 1)[-1]
    if isinstance(value, (dict, list)):  # bounded: a YAML file's aliases can make a small file a huge value
        return redact_text(json.dumps(_brief(value, [200]), ensure_ascii=False))
    text = str(value)
    if name in ("model", "small_model", "model.name", "name") or name.endswith("model"):
        return policy.redact_url(text)
    return policy.shown(name.upper().replace("-", "_"), text)
