"""Run a piece of a test as another local user: a forked child of the test process that drops to
``nobody`` (setresgid/setresuid, no supplementary groups) and reports back through a pipe as JSON.
Forked rather than exec'd: the test's interpreter lives under /root, which nobody cannot read (so
what ``work`` needs must be imported before it runs).

Needs root; ``as_nobody`` skips (fails under CI) otherwise."""

from __future__ import annotations

import encodings.idna  # noqa: F401 — loaded before the drop: nobody cannot read the interpreter's files
import json
import os
import socket
import traceback
from collections.abc import Callable
from typing import Any

from conftest import skip_or_fail

NOBODY = 65534


def need_root() -> None:
    if os.geteuid() != 0:
        skip_or_fail("needs root, to act as the user nobody")


def as_nobody(work: Callable[[], Any], timeout: float = 120) -> Any:
    """``work()`` run as nobody in a forked child; its JSON-able result (or the child's error)."""
    need_root()
    socket.getaddrinfo("127.0.0.1", 1)  # whatever it loads on first use, loaded while still root
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the test
        code = 0
        try:
            os.close(read)
            os.setgroups([])
            os.setresgid(NOBODY, NOBODY, NOBODY)
            os.setresuid(NOBODY, NOBODY, NOBODY)
            out = json.dumps({"result": work()})
        except BaseException:  # noqa: BLE001 — reported to the test
            out = json.dumps({"error": traceback.format_exc()})
            code = 1
        try:
            os.write(write, out.encode())
        finally:
            os._exit(code)
    os.close(write)
    chunks = []
    with os.fdopen(read, "rb") as pipe:
        while more := pipe.read(65536):
            chunks.append(more)
    os.waitpid(pid, 0)
    answer = json.loads(b"".join(chunks) or b'{"error": "the child said nothing"}')
    if "error" in answer:
        raise AssertionError(f"as nobody: {answer['error']}")
    return answer["result"]
