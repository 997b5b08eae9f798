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
- ``ShellHinting``: what ``ccs shell`` tells the user about starting the client inside it;
- ``TuiFace``: the TUI's launch key and footer word (a spec without it has no key of its own: the
  TUI's launch menu still lists it by its label, and the CLI launches it as any other);
- ``FixingUrls``: a base URL the client would misuse, and the one that works instead;
- ``ReadingEnvFiles``: the fields of its table that an env file's variables set (``ccs import``);
- ``SeedingTables``: fields besides the model that `ccs new --NAME-model` writes into a table it adds;
- ``TrimmingArgs``: a launch's argv as the user typed it, without the options ccs adds;
- ``ServingUnasked``: the side of a profile without the client's table (``ccs run``'s: always served).

A spec claims a capability by naming it among its bases (``class XSpec(ToolSpec[XSide], Probing)``):
mypy then checks its methods against the protocol, and the registry refuses a spec that claims one
without implementing every member (a method, or for ``TuiFace`` a non-empty attribute), or
implements only some of a capability's members.
The faces ask ``isinstance(spec, Probing)``; the protocols are runtime-checkable for that.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ccswitch_tui.model import Finding, LaunchPlan, Profile, Provider
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


@runtime_checkable
class TuiFace(Protocol):
    """How the TUI offers the client: its own launch key and its word in the footer. The registry
    refuses a key that is not one letter or digit, is one of the TUI's own keys or another client's,
    and a word longer than ten characters."""

    tui_key: str  # the TUI's launch key, "c"
    short: str  # the TUI footer's word, "Claude"


@runtime_checkable
class FixingUrls(Protocol):
    def url_fix(self, url: str) -> tuple[str, str] | None:
        """A base URL this client would misuse: (the URL that works instead, why), or None when it is
        fine. The one rule for a client's URLs: `ccs new` fixes an inherited URL with it and refuses
        one given for the client, and the launch warns with it."""


@runtime_checkable
class ReadingEnvFiles(Protocol):
    def env_fields(self, env: Mapping[str, str]) -> dict[str, Any] | None:
        """The fields of the client's table that these variables set (an env file's, as a shell that
        sources it hands them to the client; keys aside: the importer keeps those for the keyring);
        None when the client reads none of them."""


@runtime_checkable
class SeedingTables(Protocol):
    def new_table_fields(self, profile_name: str) -> dict[str, Any]:
        """Fields besides ``model`` that `ccs new --NAME-model` writes into a table it adds."""


@runtime_checkable
class TrimmingArgs(Protocol):
    def user_argv(self, argv: Sequence[str]) -> list[str]:
        """A launch's argv as the user gave it: without the options ccs adds to the client's."""


@runtime_checkable
class ServingUnasked(Protocol):
    def default_side(self, provider: Provider) -> object:
        """The side of a profile without the client's table (the profile serves the client anyway)."""


CAPABILITIES: tuple[type, ...] = (Probing, Doctoring, Resuming, Hooking, OwningProcesses, ShellHinting, TuiFace,
                                  FixingUrls, ReadingEnvFiles, SeedingTables, TrimmingArgs, ServingUnasked)


def members(capability: type) -> tuple[str, ...]:
    """The members a capability asks for: its methods, and its attributes (``TuiFace``)."""
    own = vars(capability)
    methods = [n for n, v in own.items() if callable(v) and not n.startswith("_")]
    return (*methods, *own.get("__annotations__", {}))


def _implements(cls: type, capability: type, name: str) -> bool:
    value = getattr(cls, name, None)
    if name in vars(capability).get("__annotations__", {}):
        return bool(value)  # an attribute: declared, and not empty
    return callable(value) and value is not vars(capability)[name]


def incomplete(spec: object) -> str | None:
    """Why ``spec`` claims or half-implements a capability it does not fully implement, or None."""
    cls = type(spec)
    for capability in CAPABILITIES:
        names = members(capability)
        claimed = capability in cls.__mro__
        own = [n for n in names if _implements(cls, capability, n)]
        if (claimed or own) and len(own) < len(names):
            missing = ", ".join(n for n in names if n not in own)
            how = "claims" if claimed else "implements part of"
            return (f"{how} {capability.__name__} but lacks {missing}: implement every member of "
                    f"{capability.__name__} (tools/capabilities.py), or none")
    return None
