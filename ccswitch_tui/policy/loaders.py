"""Which runtime loads the code a loader variable names. A loader variable (``policy.is_loader``)
matters most where the program it reaches runs on that runtime: ``NODE_OPTIONS=--require x.js`` runs
``x.js`` inside a Node program, ``BUN_OPTIONS=--preload x.js`` inside a Bun executable, ``LD_PRELOAD``
inside every dynamically linked program (measured with the pinned clients: docs/clients.md
and docs/launch.md). Elsewhere it reaches only the commands such a program runs.

Runtimes are named as ``diagnose.runtimes`` tells them from an executable: ``dynamic`` (an ELF file
with a program interpreter), ``node``, ``bun``, ``python``, ``shell``, ``perl``, ``ruby``, ``java``.
"""

from __future__ import annotations

import fnmatch

RUNTIME_LOADERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("dynamic", ("LD_*",)),  # glibc's and musl's dynamic loader: LD_PRELOAD, LD_AUDIT, LD_LIBRARY_PATH …
    ("node", ("NODE_OPTIONS", "NODE_PATH", "NODE_TLS_REJECT_UNAUTHORIZED", "NODE_REPL_EXTERNAL_MODULE")),
    ("bun", ("BUN_*",)),  # BUN_OPTIONS=--preload, and the rest of the family
    ("python", ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONINSPECT", "PYTHONBREAKPOINT",
                "PYTHONWARNINGS")),
    ("shell", ("BASH_ENV", "ENV", "PROMPT_COMMAND", "ZDOTDIR")),
    ("perl", ("PERL5OPT", "PERL5LIB", "PERLLIB")),
    ("ruby", ("RUBYOPT", "RUBYLIB")),
    ("java", ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS")),
)
RUNTIME_LABELS = {"dynamic": "a dynamically linked program", "node": "Node", "bun": "Bun", "python": "Python",
                  "shell": "a shell", "perl": "Perl", "ruby": "Ruby", "java": "Java"}


def loader_runtimes(name: str) -> tuple[str, ...]:
    """The runtimes that load the code ``name`` points at (``()`` for a variable none of them reads)."""
    return tuple(rt for rt, patterns in RUNTIME_LOADERS if any(fnmatch.fnmatchcase(name, p) for p in patterns))
