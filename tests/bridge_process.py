"""A bridge in a process of its own, as ccs runs it, so that a test can read the memory it takes:

    python tests/bridge_process.py '{"upstream": URL, "records": PATH, "translate": true}'

prints one line of JSON (``port``, ``token``, ``pid``) once it serves, and serves until its standard
input closes."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> None:
    config = json.loads(sys.argv[1])
    from ccswitch_tui.bridge.server import Bridge, BridgeConfig, Route
    from ccswitch_tui.bridge.translate.handler import TranslatingHandler

    handler = TranslatingHandler(provider="P") if config.get("translate") else None
    route = Route("codex", config["upstream"], **({"handler": handler} if handler else {}))
    bridge = Bridge(BridgeConfig(routes=(route,), key=config.get("key", "bounds-key-0123456789abcdef"),
                                 records_path=Path(config["records"]))).start()
    import os

    print(json.dumps({"port": bridge.port, "token": bridge.token, "pid": os.getpid()}), flush=True)
    sys.stdin.read()
    bridge.stop()


if __name__ == "__main__":
    main()
