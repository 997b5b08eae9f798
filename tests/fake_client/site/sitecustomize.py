"""Put this folder on PYTHONPATH to register the test-only client in every ccs process the tests start.

ccs itself reads no variable or file that names code to load: a process gets this client only when
whoever starts it already controls its Python (PYTHONPATH), as the tests do."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/, where the fake_client package is
try:
    from ccswitch_tui import tools
except ImportError:  # an interpreter without ccs (the stub client itself): nothing to register
    pass
else:
    tools.register("fakecli", "fake_client.spec")
