"""What a client spec may do beyond its core: the optional capabilities, each a ``Protocol``.

Every spec provides the core (``ToolSpec``: its name, label, program, its table, ``plan``, its
declared layers, its package). The rest is optional, and a face asks for it by capability, not by a
base-class method that answers "nothing" for most clients:

- ``Probing``: the requests ``ccs check`` sends for a side (a spec without it is not probed);
- ``Doctoring``: the client's own part of ``ccs doctor`` (its contamination sources at rest);
- ``Resuming``: the resume hint after an interactive session, and which arguments are a script's
  one-prompt call (no hint, and a one-prompt launch's endpoints are watched);
- ``Hooking``: the client's own steps around a launch, and the translations the bridge must make;
- ``OwningProcesses``: what is wrong with the client's own processes (``ps``/``inspect``), and what
  to end before its state folder is removed (``ccs rm``);
- ``ShellHinting``: what ``ccs shell`` tells the user about starting the client inside it.

A spec claims a capability by naming it among its bases (``class XSpec(ToolSpec[XSide], Probing)``):
mypy then checks its methods against the protocol, and the registry refuses a spec that claims one
without implementing every method, or implements only some of a capability's methods.
The faces ask ``isinstance(spec, Probing)``; the protocols are runtime-checkable for that.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from ccswitch_tui.model import Finding, LaunchPlan, Profile
from ccswitch_tui.tools.spec import DoctorContext, DoctorPart, LaunchHook, LaunchRecords, ProbeSpec


@runtime_checkable
class Probing(Protocol):
    def probes(self, plan: LaunchPlan, profile: Profile) -> list[ProbeSpec]:
        """The requests `ccs check` sends for this side, from the plan the launch would use."""


@runtime_checkable
class Doctoring(Protocol):
    def doctor(self, ctx: DoctorContext) -> DoctorPart | None:
        """The client's contamination sources at rest (settings layers, config files)."""


@runtime_checkable
class Resuming(Protocol):
    def resume_command(self, plan: LaunchPlan, since: float) -> str | None:
        """After an interactive session: the client arguments that resume the session the launch
        wrote since ``since`` (epoch seconds), e.g. ``--resume ID``; None when there is none."""

    def batch(self, args: Sequence[str]) -> bool:
        """Whether these client arguments run one prompt and exit (``claude -p``, ``codex exec``): a
        script's call, after which a shim prints no resume hint."""


@runtime_checkable
class Hooking(Protocol):
    def hooks(self, plan: LaunchPlan) -> Sequence[LaunchHook]:
        """The client's own steps around a launch (e.g. ending daemons that hold another key)."""

    def translations(self, plan: LaunchPlan) -> Mapping[str, str]:
        """Base-URL locations of the plan whose requests the bridge must translate, with the
        translation's name (``responses-to-chat``): a launch that needs one always goes through it."""


@runtime_checkable
class OwningProcesses(Protocol):
    def process_findings(self, pid: int, argv: Sequence[str], env: Mapping[str, str] | None,
                         runs: LaunchRecords) -> list[Finding]:
        """For `ccs ps`/`inspect`: what is wrong with one of the client's own processes (a daemon
        whose launch is over), beyond what the environment rules find."""

    def before_remove(self, state_dir: Path) -> None:
        """`ccs rm`: end what still uses the client's state folder before it is deleted."""


@runtime_checkable
class ShellHinting(Protocol):
    def shell_hint(self, plan: LaunchPlan) -> str | None:
        """What `ccs shell --tool NAME` tells the user about starting the client inside it."""


CAPABILITIES: tuple[type, ...] = (Probing, Doctoring, Resuming, Hooking, OwningProcesses, ShellHinting)


def members(capability: type) -> tuple[str, ...]:
    """The methods a capability asks for."""
    return tuple(n for n, v in vars(capability).items() if callable(v) and not n.startswith("_"))


def incomplete(spec: object) -> str | None:
    """Why ``spec`` claims or half-implements a capability it does not fully implement, or None."""
    cls = type(spec)
    for capability in CAPABILITIES:
        names = members(capability)
        claimed = capability in cls.__mro__
        own = [n for n in names if callable(getattr(cls, n, None)) and getattr(cls, n) is not vars(capability)[n]]
        if (claimed or own) and len(own) < len(names):
            missing = ", ".join(n for n in names if n not in own)
            how = "claims" if claimed else "implements part of"
            return (f"{how} {capability.__name__} but lacks {missing}: implement every method of "
                    f"{capability.__name__} (tools/capabilities.py), or none")
    return None
