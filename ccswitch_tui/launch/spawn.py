"""Start a child as ``subprocess.Popen(argv, executable=…, env=…, cwd=…, preexec_fn=…,
close_fds=True)`` starts it, without loading ``subprocess``.

ccs stands in front of every client it launches, and ``subprocess`` (with the ``selectors``,
``locale`` and ``threading`` it loads) was a twentieth of a launch's start. A launch needs one fork
and one exec and nothing else of it. In the child, in Popen's order: the working folder, the
signals Python ignores (SIGPIPE, SIGXFSZ) back to their defaults, ``in_child``, every inherited
descriptor above stderr closed, the exec. A failure before the exec comes back to the parent
through a close-on-exec pipe and is raised there as the same ``OSError`` (``FileNotFoundError``
for a missing program or folder …), with the child reaped.
"""

from __future__ import annotations

import errno as errnos
import os

TYPE_CHECKING = False
# the C module under `signal`: the same calls and numbers, without the enums (enum is most of a resident
# launch's client's imports: resident/client.py); type checkers see `signal`
if TYPE_CHECKING:
    import signal
    from collections.abc import Callable, Mapping, Sequence
else:
    import _signal as signal

# helper_spawn.RESTORED_SIGNALS too: not imported from there, one module less on every launch
RESTORED_SIGNALS = tuple(getattr(signal, name) for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ") if hasattr(signal, name))
_MAXFD = os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 256


def _program(executable: str, env: Mapping[str, str]) -> list[str]:
    """Where to exec ``executable``: itself when it names a path, else each entry of the child's
    PATH (as Popen looks it up)."""
    if os.path.dirname(executable):
        return [executable]
    return [os.path.join(folder, executable) for folder in os.get_exec_path(dict(env))]


def spawn(argv: Sequence[str], executable: str, env: Mapping[str, str], cwd: str,
          in_child: Callable[[], None] | None = None) -> int:
    """The started child's pid; raises the ``OSError`` that kept it from starting."""
    args = [os.fsencode(a) for a in argv]
    environ = {os.fsencode(k): os.fsencode(v) for k, v in env.items()}
    programs = [os.fsencode(p) for p in _program(executable, env)]
    read_end, write_end = os.pipe()  # both close-on-exec: the parent reads EOF once the exec happened
    try:
        pid = os.fork()
    except BaseException:
        os.close(read_end)
        os.close(write_end)
        raise
    if pid == 0:  # the child: never returns
        _child(args, environ, programs, cwd, in_child, read_end, write_end)
    os.close(write_end)
    try:
        report = _read_all(read_end)
    finally:
        os.close(read_end)
    if report:
        _reap(pid)
        raise _error(report, executable, cwd)
    return pid


def _child(args: list[bytes], environ: dict[bytes, bytes], programs: list[bytes], cwd: str,
           in_child: Callable[[], None] | None, read_end: int, write_end: int) -> None:
    step = "cwd"
    code = 0
    try:
        os.close(read_end)
        os.chdir(cwd)
        for sig in RESTORED_SIGNALS:
            signal.signal(sig, signal.SIG_DFL)
        step = "in_child"
        if in_child is not None:
            in_child()
        step = "exec"
        os.closerange(3, write_end)
        os.closerange(write_end + 1, _MAXFD)
        first: OSError | None = None
        for program in programs:
            try:
                os.execve(program, args, environ)
            except OSError as exc:  # as Popen: the first error other than "not there" is the one told
                if first is None or (first.errno == errnos.ENOENT and exc.errno != errnos.ENOENT):
                    first = exc
        raise first or FileNotFoundError(errnos.ENOENT, os.strerror(errnos.ENOENT))
    except OSError as exc:
        code = exc.errno or 0
    except BaseException:  # noqa: BLE001 - in the child, anything is reported and ends it
        step, code = "in_child", 0
    try:
        os.write(write_end, f"{step}:{code}".encode())
    finally:
        os._exit(255)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 256):
        chunks.append(chunk)
    return b"".join(chunks)


def _reap(pid: int) -> None:
    while True:
        try:
            os.waitpid(pid, 0)
            return
        except ChildProcessError:
            return
        except InterruptedError:
            continue


def _error(report: bytes, executable: str, cwd: str) -> OSError:
    step, _, code = report.decode("ascii", "replace").partition(":")
    errno = int(code) if code.isdigit() else 0
    if step == "in_child" or not errno:
        return OSError(f"the child failed before it could start {executable!r}")
    return OSError(errno, os.strerror(errno), cwd if step == "cwd" else executable)

