"""The layers that can steer a client, declared as data: where each lives, its format and scope, the keys
in it that route requests or load code, how a ccs launch beats them, and what a launch does with the
ones it cannot beat. Each spec lists its layers (``ToolSpec.layers``), highest precedence first; one
engine (``launch/layers.py``) turns them into a launch's refusals and warnings, the manifest's record,
``doctor``'s rows and findings, and the table in docs/clients.md. Nothing here reads a file: the declarations are
frozen value classes, cheap to build when a spec module is imported.

A layer of scope ``ccs`` is one a launch writes itself (a file among the plan's files, or options of the
plan's argv): every key it sets beats the same key in the layers declared after it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ccswitch_tui.model import Finding
from ccswitch_tui.valueclass import field, valueclass

SCOPES = ("managed", "system", "ccs", "user", "project", "variable")
FORMATS = ("json", "jsonc", "toml", "yaml", "dotenv", "argv")
ROLES = ("base-url", "model", "provider", "key", "key-helper", "proxy", "headers", "auth", "env", "config", "trust")
# What a ccs launch does with a layer: the client loads it; ccs makes the client skip it (``why`` says
# how, measured); or it loads unless the launch is ``--isolate``d.
LOADED, SKIPPED, ISOLATE = "loaded", "skipped", "isolate"
# What a key no ccs layer beats does to a launch: refuses it (with ways out), or is named in a warning.
REFUSE, WARN = "refuse", "warn"
# Where a layer lives (``Place.root``)
ROOTS = ("home", "cwd", "git-root", "project", "absolute", "folder", "file-var", "content-var", "state", "argv")

# A value check of a client's own (e.g. Codex refusing ``wire_api = "chat"``): the parsed data (None when
# the file does not parse), its text, its path, the environment → findings, each with the way out
Check = Callable[[Any, str, str, Mapping[str, str]], list[Finding]]


@valueclass(frozen=True)
class Place:
    """Where a layer's files are. ``files`` are names relative to the root, highest precedence first."""

    root: str
    files: tuple[str, ...] = ()
    var: str | None = None  # folder: the variable naming it; file-var/content-var: the variable; absolute: moves it
    default: str | None = None  # folder: where it is when ``var`` is unset ("~/.claude", "/etc/x")
    test_var: str | None = None  # a ccs variable that moves an absolute place (tests; read from ccs's own shell)
    first: bool = False  # project: only the nearest folder that has one of the files counts
    stop: str = "git"  # project: walk from the working folder up to the git root ("git"), the home ("home") or "/"
    option: str | None = None  # argv: the option whose values are the layer's keys ("-c"); None: every --name value
    root_first: bool = False  # project: the folder nearest the root first (it wins), not the nearest
    sibling: bool = False  # absolute: ``test_var`` names a file beside this one (not this one)
    platforms: tuple[tuple[str, str], ...] = ()  # absolute: (sys.platform, path) where it lives elsewhere

    def shown(self) -> str:
        """Where it is, in words, for doctor and docs/clients.md."""
        names = "|".join(self.files)
        if self.root == "home":
            return f"~/{names}"
        if self.root == "cwd":
            return f"./{names}"
        if self.root == "git-root":
            return f"<git root>/{names}"
        if self.root == "project":
            up = {"git": "the git root", "home": "the home folder"}.get(self.stop, "/")
            return f"{'the nearest ' if self.first else ''}{names} from the working folder up to {up}"
        if self.root == "absolute":
            moved = f" (${self.var} moves it)" if self.var else ""
            return f"{names}{moved}"
        if self.root == "folder":
            return f"${self.var}/{names}" + (f" (default {self.default}/)" if self.default else "")
        if self.root == "file-var":
            return f"the file ${self.var} names"
        if self.root == "content-var":
            return f"the content of ${self.var}"
        if self.root == "state":
            return f"the profile's own {names}"
        return f"ccs's {self.option or ''} options".replace("  ", " ")


def home(*files: str) -> Place:
    return Place("home", files)


def working(*files: str) -> Place:
    return Place("cwd", files)


def project(*files: str, first: bool = False, stop: str = "git", root_first: bool = False) -> Place:
    return Place("project", files, first=first, stop=stop, root_first=root_first)


def git_root(*files: str) -> Place:
    return Place("git-root", files)


def system(*paths: str, test_var: str | None = None, moved_by: str | None = None, sibling: bool = False,
           platforms: tuple[tuple[str, str], ...] = ()) -> Place:
    return Place("absolute", paths, var=moved_by, test_var=test_var, sibling=sibling, platforms=platforms)


def folder(var: str, *files: str, default: str | None = None, test_var: str | None = None) -> Place:
    return Place("folder", files, var=var, default=default, test_var=test_var)


def file_var(var: str) -> Place:
    return Place("file-var", var=var)


def content_var(var: str) -> Place:
    return Place("content-var", var=var)


def state(*files: str) -> Place:
    return Place("state", files)


def argv(option: str | None = None) -> Place:
    return Place("argv", option=option)


@valueclass(frozen=True)
class Key:
    """A key of a layer that routes or loads code. ``path`` is dotted, ``*`` standing for any one part
    (``env.*``, ``provider.*.options.baseURL``); in a dotenv layer it is a variable name or ``*``.
    A list of objects with a ``name`` is read as an object by name (Aider's model settings)."""

    path: str
    role: str
    names: str | None = None  # a ``*`` over variables: regex of the names that count (None: the policy's)
    fills: bool = False  # the client takes it only where its environment lacks the variable (.env, env tables)
    beaten_by: tuple[str, ...] = ()  # what else beats it: "env:NAME" (the launch's environment sets NAME), or
    #                                  a key a ccs layer sets ("openai-api-base")
    only: tuple[Any, ...] = ()  # the values that route (folder trust turned off); empty: any value
    others: str | None = None  # a ``*`` instance no ccs layer sets: why it does not reach a launch (not judged)


@valueclass(frozen=True)
class Layer:
    """One layer. ``why`` is the measured fact behind its effect (how ccs skips or beats it)."""

    name: str  # unique within the client: "project", "home-env"
    scope: str
    format: str
    place: Place
    keys: tuple[Key, ...] = ()
    launch: str = LOADED
    unbeaten: str = REFUSE
    force: bool = True  # --force lifts the refusal
    why: str = ""
    check: Check | None = None
    # the client skips the layer when a variable of its environment has one of these values (a launch sets it)
    off_when: tuple[str, tuple[str, ...]] | None = None
    on_when: tuple[str, tuple[str, ...]] | None = None  # … or reads it only then
    flags: tuple[str, ...] = field(default=(), init=False)

    def __post_init__(self) -> None:
        problems = [x for x, ok in ((f"scope {self.scope!r}", self.scope in SCOPES),
                                    (f"format {self.format!r}", self.format in FORMATS),
                                    (f"launch {self.launch!r}", self.launch in (LOADED, SKIPPED, ISOLATE)),
                                    (f"unbeaten {self.unbeaten!r}", self.unbeaten in (REFUSE, WARN)),
                                    (f"root {self.place.root!r}", self.place.root in ROOTS)) if not ok]
        problems += [f"role {k.role!r} of {k.path}" for k in self.keys if k.role not in ROLES]
        if problems:
            raise TypeError(f"layer {self.name!r}: unknown {', '.join(problems)}")
        flags = (("isolate",) if self.launch == ISOLATE else ()) + (("force",) if self.force else ())
        object.__setattr__(self, "flags", flags)

    @property
    def ours(self) -> bool:
        return self.scope == "ccs"

    def read_by(self, env: Mapping[str, str]) -> bool:
        """Whether a client with this environment reads the layer at all."""
        if self.off_when and env.get(self.off_when[0], "").lower() in self.off_when[1]:
            return False
        return not (self.on_when and env.get(self.on_when[0], "").lower() not in self.on_when[1])


@valueclass(frozen=True)
class Package:
    """How the pinned client installs (scripts/install-clients.sh reads these): its package manager,
    package, version, the executable it provides, and the packages it needs beside it."""

    manager: str  # npm | pypi
    name: str
    version: str
    check: str = "--version"  # what the install runs to prove the client starts (its output names the version)
    broken_hint: str = ""  # what to look at when the installed client does not start


def git_root_of(cwd: Path) -> Path | None:
    """The folder holding ``.git``, from ``cwd`` up; None outside a repository."""
    for folder_ in (cwd, *cwd.parents):
        if (folder_ / ".git").exists():
            return folder_
    return None


def project_dirs(cwd: Path, stop: str = "git", home: Path | None = None) -> list[Path]:
    """The working folder and its parents, nearest first, up to the git root ("git"; to ``/`` outside
    a repository) or up to ``home``, which is left out ("home")."""
    out: list[Path] = []
    for folder_ in (cwd, *cwd.parents):
        if stop == "home" and folder_ == home:
            break
        out.append(folder_)
        if stop == "git" and (folder_ / ".git").exists():
            break
    return out
