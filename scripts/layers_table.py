"""Print the table of the layers every client declares (docs/clients.md holds exactly this between its
markers; tests/test_conformance_layers.py checks it, scripts/doc_tables.py rewrites it in place).
Run: .venv/bin/python scripts/layers_table.py"""

from ccswitch_tui import tools
from ccswitch_tui.launch.layers import layers_table

print(layers_table(tools.load().specs()))
