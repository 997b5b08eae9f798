"""Print the README's table of the layers every client declares (tests/test_conformance_layers.py checks
that the README holds exactly this between its markers). Run: .venv/bin/python scripts/layers_table.py"""

from ccswitch_tui import tools
from ccswitch_tui.launch.layers import layers_table

print(layers_table(tools.load().specs()))
