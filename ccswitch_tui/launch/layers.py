"""The one engine over the layers the client specs declare (tools/layers.py): it finds each layer's
files, reads the keys that route or load code (launch/layer_files.py), and says what a launch does with
them (``judge``: refusals, warnings and the manifest's record) and what a client started by hand would
follow (``doctor_part``: doctor's rows and findings), and writes the table of them in docs/clients.md. No client
module reads its own layers.

A key is beaten when a layer ccs writes (scope ``ccs``: a file among the plan's files, or the plan's
argv) and declared above it sets the same key, when the launch's environment sets a variable the key
only fills in, or when something its declaration names (``beaten_by``) is there. What is not beaten
refuses the launch (the layer's ways out) or is named in a warning, as the layer declares; a file ccs
cannot read refuses it too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ccswitch_tui.launch.layer_files import Seen, by_name, locate, read, shown
from ccswitch_tui.model import ERROR, WARN, Finding, LaunchPlan, Refusal
from ccswitch_tui.policy.families import Families
from ccswitch_tui.tools.layers import ISOLATE, REFUSE, SKIPPED, Key, Layer
from ccswitch_tui.tools.spec import DoctorPart, ToolSpec
from ccswitch_tui.valueclass import field, replace, valueclass

# --- a launch ---------------------------------------------------------------------------------------

@valueclass
class Judged:
    """What the declared layers do to one launch."""

    refusals: list[Refusal] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    record: list[str] = field(default_factory=list)  # the manifest's ``layers``: every file found, and its fate
    applied: list[str] = field(default_factory=list)  # the manifest's ``project_layers``: keys that reached it
    refused_at: list[tuple[str, list[str]]] = field(default_factory=list)  # each refusal's file and keys


def judge(spec: ToolSpec, plan: LaunchPlan, ccs_env: Mapping[str, str], state_dir: Path | None,
          isolate: bool, families: Families, cache: Path | None = None) -> Judged:
    """The refusals, warnings and manifest record the spec's declared layers give ``plan``; ``state_dir``
    is the client's folder under ccs's state, ``cache`` where ccs's own parsed TOML texts are kept."""
    out = Judged()
    env_pins = {f"env:{n}" for n, v in plan.env.items() if v}
    ours: list[tuple[Layer, str, set[str]]] = []  # every file (or argv) ccs writes, in declared order
    for layer in (x for x in spec.layers or () if x.ours):
        for where in locate(layer.place, plan.env, plan.cwd, ccs_env, state_dir):
            seen = read(layer, where, plan.env, families, plan, cache)
            if seen is not None:
                ours.append((layer, where, set(seen.keys) | set(_flat(seen.data))))
    named = env_pins.union(*(keys for _, _, keys in ours))  # what a key's ``beaten_by`` may name
    above: set[str] = set(env_pins)  # the keys of the ccs layers declared above the current one
    met: set[str] = {where for _, where, _ in ours}  # a file two layers name (the git root is the working folder)
    for layer in spec.layers or ():
        if layer.ours:
            above.update(*(keys for x, _, keys in ours if x is layer))
            continue
        off = not layer.read_by(plan.env)
        for where in locate(layer.place, plan.env, plan.cwd, ccs_env, state_dir):
            if where in met:
                continue
            met.add(where)
            seen = read(layer, where, plan.env, families)  # (not cached: the user's and others' files
            if seen is not None:                         # may hold secrets, and the cache is ccs's own)
                _judge_one(spec, seen, above, named, isolate, out, off)
    return out


def _flat(data: Any, prefix: str = "") -> Iterator[str]:
    """Every dotted key of ``data`` (objects by name too): what a ccs layer sets."""
    data = by_name(data)
    if isinstance(data, dict):
        for k, v in data.items():
            path = f"{prefix}{k}"
            yield path
            yield from _flat(v, path + ".")


def _beaten(key: Key | None, concrete: str, above: set[str], named: set[str]) -> bool:
    """A key is beaten by the same key in a ccs layer above its own, by the variable it only fills in, or by
    what its declaration names."""
    if concrete in above:
        return True
    if key is None:
        return False
    name = concrete.rsplit(".", 1)[-1]
    if key.fills and f"env:{name}" in named:
        return True
    return any(b in named for b in key.beaten_by)


def _judge_one(spec: ToolSpec, seen: Seen, above: set[str], named: set[str], isolate: bool,  # noqa: C901
               out: Judged, off: bool = False) -> None:
    layer, where, label = seen.layer, seen.where, spec.label
    skipped = off or layer.launch == SKIPPED or (layer.launch == ISOLATE and isolate)
    about = f"{label}'s {layer.scope} layer {layer.name!r}" + (f": {layer.why}" if layer.why else "")
    if seen.error:
        out.record.append(f"{where} ({layer.name}): {seen.error}")
        if skipped or layer.unbeaten != REFUSE:
            out.warnings.append(f"{where} ({about}): {seen.error}")
            return
        # what ccs cannot read it cannot judge, and the client may read it all the same
        error_ways = ((f"--isolate to launch without this folder's {label} files",)
                      if "isolate" in layer.flags else ()) \
            + (("--force to launch anyway (recorded in the manifest)",) if "force" in layer.flags else ()) \
            + (f"fix or remove {where}",)
        out.refusals.append(Refusal("settings-override", f"{where} ({about}) {seen.error}, so ccs cannot tell "
                                    f"what {label} takes from it", error_ways, flags=layer.flags))
        out.refused_at.append((where, []))
        return
    if not seen.keys:
        out.record.append(f"{where} ({layer.name}): no routing keys")
        return
    names = ", ".join(seen.keys)
    if skipped:
        why = layer.why if off or layer.launch == SKIPPED else "--isolate"
        out.record.append(f"{where} ({layer.name}): sets {names}; not loaded ({why})")
        if layer.scope == "project":
            out.warnings.append(f"{where} sets {names}, which would redirect {_a(label)} started here by hand; "
                                f"ccs's launch does not load it ({why})")
        return
    beaten = [k for k in seen.keys if _beaten(seen.decl.get(k), k, above, named)]
    ignored = [k for k in seen.keys if k not in beaten and (key := seen.decl.get(k)) and key.others]
    live = [k for k in seen.keys if k not in beaten and k not in ignored]
    note = f"sets {names}" + (f"; beaten by ccs: {', '.join(beaten)}" if beaten else "") \
        + (f"; not used: {', '.join(ignored)}" if ignored else "")
    out.record.append(f"{where} ({layer.name}): {note}")
    if beaten and layer.scope == "project":
        out.warnings.append(f"{where} sets {', '.join(beaten)}, which would redirect {_a(label)} started here by hand; "
                            "ccs's launch sets its own")
    if not live:
        return
    keys = ", ".join(live)  # named, not shown: values from a file stay out of messages
    out.applied.append(f"{where}: {keys}")
    if layer.unbeaten != REFUSE:
        out.warnings.append(f"{where} sets {keys} ({about}), which no layer of ccs's launch replaces: {label} "
                            "takes it")
        return
    ways = []
    if "isolate" in layer.flags:
        ways.append(f"--isolate to launch without this folder's {label} files")
    if "force" in layer.flags:
        ways.append("--force to launch anyway (recorded in the manifest)")
    if layer.scope in ("managed", "system"):
        message = (f"the {layer.scope} {label} settings {where} set {keys}, which beat the layers ccs gives the "
                   "launch; ccs cannot override them")
        ways.append("ask whoever manages this machine to remove them")
    else:
        message = f"{where} sets {keys} ({about}), which would override the profile"
        ways.append(f"remove {keys} from {where}")
    out.refusals.append(Refusal("settings-override", message, tuple(ways), flags=layer.flags))
    out.refused_at.append((where, live))


def with_layers(spec: ToolSpec, plan: LaunchPlan, ccs_env: Mapping[str, str], state_dir: Path | None,
                isolate: bool, families: Families, cache: Path | None = None) -> LaunchPlan:
    """The plan with what its client's declared layers do to it: refusals, warnings, the manifest's record."""
    judged = judge(spec, plan, ccs_env, state_dir, isolate, families, cache)
    return replace(plan, refusals=(*plan.refusals, *judged.refusals), warnings=(*plan.warnings, *judged.warnings),
                   layers=tuple(judged.record) if judged.record else plan.layers,
                   project_layers=tuple(judged.applied) if judged.applied or judged.record else plan.project_layers)


# --- a client started by hand (doctor) ---------------------------------------------------------------

def doctor_part(spec: ToolSpec, environ: Mapping[str, str], cwd: Path, families: Families) -> DoctorPart | None:
    """doctor's section for the spec's layers as a client started by hand in ``cwd`` from this shell
    would follow them: one row per place (present or not), a finding per routing key, one per file
    that cannot be read, and the client's own checks of what a file holds."""
    if not spec.layers:
        return None
    rows: list[dict[str, Any]] = []
    part = DoctorPart(f"{spec.name}_layers", rows,
                      lines=[f"{spec.label} layers (highest first; docs/clients.md says what each does)"])
    met: set[str] = set()
    for layer in spec.layers:
        if layer.place.root in ("state", "argv") or not layer.read_by(environ):
            continue  # only ccs's launches have it, or this shell makes the client skip it
        places = locate(layer.place, environ, cwd, environ, None)
        if not places:
            rows.append({"kind": layer.name, "scope": _kind(layer), "path": layer.place.shown(), "exists": False,
                         "error": None, "routing": {}})
            part.lines.append(f"  {layer.name:<15} {layer.place.shown()}: not set")
            continue
        for where in places:
            if where in met:
                continue  # the same file under an earlier layer's name (the git root is the working folder)
            met.add(where)
            seen = read(layer, where, environ, families)
            if seen is None and layer.place.root == "project":
                continue  # a project file may be in many folders: only those that exist are listed
            routing = {k: shown(k, v) for k, v in (seen.keys if seen else {}).items()}
            row = {"kind": layer.name, "scope": _kind(layer), "path": where, "exists": seen is not None,
                   "error": seen.error if seen else None,
                   "routing": routing}
            rows.append(row)
            state = "absent" if seen is None else (seen.error or (
                ", ".join(f"{k}={v}" for k, v in routing.items()) or "no routing keys"))
            part.lines.append(f"  {layer.name:<15} {where}: {state}")
            if seen is None:
                continue
            part.findings += _findings(spec, seen, cwd, environ)
    return part


def _env_beaters(key: Key | None, concrete: str) -> list[str]:
    """The variables whose presence in the client's environment beats this key."""
    if key is None:
        return []
    names = [b[4:] for b in key.beaten_by if b.startswith("env:")]
    return names + ([concrete.rsplit(".", 1)[-1]] if key.fills else [])


def _kind(layer: Layer) -> str:
    return "user" if layer.ours else layer.scope


def _findings(spec: ToolSpec, seen: Seen, cwd: Path, environ: Mapping[str, str]) -> list[Finding]:
    layer, label = seen.layer, spec.label
    kind = _kind(layer)
    if seen.error:
        own = layer.check(None, seen.text, seen.where, environ) if layer.check and seen.text else []
        return own or [Finding("settings-invalid", WARN, f"{kind} {label} layer {layer.name!r} {seen.error}; "
                               f"{label} may refuse or ignore it; fix the file", path=seen.where)]
    out: list[Finding] = []
    if layer.check is not None:
        out += layer.check(seen.data, seen.text, seen.where, environ)
    where = f"in {cwd}" if kind == "project" else "directly"
    if layer.ours:
        effect = "ccs launches use their own (the profile's) instead"
    elif layer.launch == SKIPPED or layer.off_when:
        effect = f"ccs launches do not load it ({layer.why})"
    elif layer.launch == ISOLATE:
        effect = (f"ccs launches beat what their own layers set and refuse the rest (--isolate, --force); {layer.why}"
                  if layer.why else "ccs launches beat what their own layers set and refuse the rest (--isolate, "
                  "--force)")
    elif layer.unbeaten == REFUSE:
        effect = ("ccs launches beat what their own layers set and refuse the rest (--force to launch anyway)"
                  + (f"; {layer.why}" if layer.why else ""))
    else:
        effect = "ccs launches beat what their own layers set and warn about the rest" + (
            f"; {layer.why}" if layer.why else "")
    severe = kind in ("project", "managed", "system") and not layer.ours
    for key, value in seen.keys.items():
        declared = seen.decl.get(key)
        if declared is not None and declared.others and kind != "project":
            continue
        names = _env_beaters(declared, key)
        unless = f" unless {' or '.join(names)} is set (the environment wins)" if names else ""
        out.append(Finding(
            "settings-override", ERROR if severe and not names else WARN,
            f"{kind} {label} layer {layer.name!r} sets {key}={shown(key, value)}, which {_a(label)} started {where} "
            f"follows{unless}; {effect}; remove it to choose the provider in one place", path=seen.where,
            variable=key))
    return out


# --- the docs' table ---------------------------------------------------------------------------------

def _in_a_launch(layer: Layer, below_ours: bool) -> str:
    if layer.ours:
        return f"ccs's own: {layer.why}"
    if not layer.keys:
        return f"no routing keys ({layer.why})"
    if layer.off_when or layer.launch == SKIPPED:
        return f"not loaded: {layer.why}"
    beaten = ("keys ccs's own layers or the launch's variables set are beaten; " if below_ours or any(
        k.fills or k.beaten_by for k in layer.keys) else "no layer of ccs's beats it; ")
    if layer.unbeaten != REFUSE:
        rest = "the rest are named in a warning"
    else:
        rest = f"the rest refuse the launch ({', '.join('--' + f for f in layer.flags)})"
    return beaten + rest + (f"; {layer.why}" if layer.why else "")


def layers_table(specs: Sequence[ToolSpec]) -> str:
    """docs/clients.md's table of every client's declared layers, highest precedence first."""
    lines = ["| client | layer | scope | where | format | keys that route | in a ccs launch |",
             "|---|---|---|---|---|---|---|"]
    for spec in specs:
        below_ours = False
        for layer in spec.layers or ():
            keys = ", ".join(f"`{k.path}`" for k in layer.keys) or "-"
            where = layer.place.shown().replace("|", " or ")
            lines.append(f"| {spec.label} | {layer.name} | {layer.scope} | {where} | {layer.format} | {keys} | "
                         f"{_in_a_launch(layer, below_ours).replace('|', '/')} |")
            below_ours |= layer.ours
        if not spec.layers and spec.layers_reason:
            lines.append(f"| {spec.label} | - | - | - | - | - | {spec.layers_reason} |")
    return "\n".join(lines)


def _a(label: str) -> str:
    """``a Kilo Code``, ``an OpenCode``."""
    return f"{'an' if label[:1].lower() in 'aeiou' else 'a'} {label}"
