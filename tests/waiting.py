"""Waiting on the event a test stands for, never a fixed time: ``until`` polls a condition with a
deadline; the rest are conditions the tests wait on (a child has exec'd its program, nothing holds a
file open any more, a process waits for a lock)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def until(condition: Callable[[], T], timeout: float = 20.0, what: str = "the condition",
          every: float = 0.01) -> T:
    """``condition()``'s first true value, polled until ``timeout`` seconds have passed (then the test fails)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout:g} s waiting for {what}")
        time.sleep(every)


def execed(pid: int, argv: list[str]) -> bool:
    """Whether process ``pid`` runs ``argv`` yet, not the program that forked it: only then does
    /proc show the environment it was started with."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return raw.split(b"\0")[:-1] == [os.fsencode(a) for a in argv]


def wait_execed(pid: int, argv: list[str], timeout: float = 20.0) -> None:
    until(lambda: execed(pid, argv), timeout, f"process {pid} to run {argv[0]}")


def open_by_anyone(path: Path) -> bool:
    """Whether a process of this user still holds ``path`` open (a tracer still writing its log)."""
    target = str(path)
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            for fd in fd_dir.iterdir():
                if os.readlink(fd) == target:
                    return True
        except OSError:  # gone, or another user's
            continue
    return False


def blocked_on_a_lock(pid: int) -> bool:
    """Whether process ``pid`` waits for a file lock another holds (a ``->`` line of /proc/locks)."""
    for line in Path("/proc/locks").read_text().splitlines():
        cols = line.split()
        if len(cols) > 5 and cols[1] == "->" and cols[5] == str(pid):
            return True
    return False
