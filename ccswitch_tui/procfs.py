"""Reading other processes on Linux (``/proc``): their start identity, command line and environment.
Leaf helpers: no ccs module below them, used by liveness, ``ps``/``inspect`` and client daemons."""

from __future__ import annotations

import os


def _boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            return fh.read().strip()
    except OSError:
        return None


def process_start(pid: int) -> str | None:
    """An identity of process ``pid``'s start: ``BOOTID:TICKS`` on Linux, the psutil create time
    elsewhere; None when there is no such process (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
    except FileNotFoundError:
        return None
    except OSError:
        return _psutil_start(pid)
    if fields[0] in (b"Z", b"X"):
        return None
    return f"{_boot_id()}:{int(fields[19])}"


def _psutil_start(pid: int) -> str | None:
    import psutil  # lazy: psutil loads only for process listings

    try:
        p = psutil.Process(pid)
        if p.status() == psutil.STATUS_ZOMBIE:
            return None
        return f"ct:{p.create_time():.2f}"
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


def parse_environ(raw: bytes) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in raw.split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep and name:
            env[name.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return env


def read_file(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks: list[bytes] = []
        while True:
            data = os.read(fd, 131072)
            if not data:
                return b"".join(chunks)
            chunks.append(data)
    finally:
        os.close(fd)
