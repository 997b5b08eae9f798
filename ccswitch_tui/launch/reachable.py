"""A one-prompt launch to an endpoint that does not answer says so at once. A client retries a
connection it cannot make for minutes (`claude -p` against a stopped gateway: ten tries with backoff)
and says nothing meanwhile, where `ccs check` knew at once: so, beside such a child, a thread of
ccs opens one TCP connection to each base URL of the plan and, when one fails, prints one line.

Nothing is sent (a connection is opened and closed), the child is not held up (the thread starts with
it), and nothing is said once the child is over. A plan whose client goes through a proxy (the
profile's own ``HTTPS_PROXY`` …) or through ccs's bridge (a loopback URL ccs holds) is not checked:
the proxy, or the bridge's own records, decide what the child can reach.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Callable
from urllib.parse import urlsplit

from ccswitch_tui.model import LaunchPlan
from ccswitch_tui.policy import is_proxy
from ccswitch_tui.terminal_text import visible

TIMEOUT = 5.0  # seconds for a connection: a slow network answers well within it


def targets(plan: LaunchPlan) -> list[tuple[str, int, str]]:
    """(host, port, base URL) for each http(s) base URL of the plan; none when a proxy carries them."""
    if any(is_proxy(k) and v for k, v in plan.env.items() if k.upper() != "NO_PROXY"):
        return []
    out: dict[tuple[str, int], str] = {}
    for url in plan.base_urls.values():
        try:
            parts = urlsplit(url)
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            continue
        if parts.scheme in ("http", "https") and parts.hostname:
            out.setdefault((parts.hostname, port), url)
    return [(host, port, url) for (host, port), url in out.items()]


def failure(host: str, port: int, timeout: float = TIMEOUT) -> str | None:
    """Why a TCP connection to ``host:port`` cannot be made; None when it can."""
    try:
        socket.create_connection((host, port), timeout=timeout).close()
        return None
    except socket.gaierror:
        return f"host {host} not found"
    except ConnectionRefusedError:
        return f"connection to {host}:{port} refused (nothing listens there)"
    except TimeoutError:
        return f"no answer from {host}:{port} within {timeout:.0f} s"
    except OSError as exc:
        return f"{host}:{port}: {exc.strerror or exc}"


def watch(plan: LaunchPlan, label: str, over: Callable[[], bool]) -> threading.Thread | None:
    """Start the check beside the child (``over``: whether the child has ended); None when there is
    nothing to check."""
    found = targets(plan)
    if not found:
        return None

    def run() -> None:
        for host, port, url in found:
            why = failure(host, port)
            if why and not over():
                print(visible(f"ccs: warning: {url} does not answer ({why}); {label} retries such a connection for "
                              f"minutes before it gives up: `ccs check {plan.profile}` probes the endpoint"),
                      file=sys.stderr, flush=True)

    thread = threading.Thread(target=run, name="ccs-reachable", daemon=True)
    thread.start()
    return thread
