"""Rewrite the tables the docs generate from the registry, between their markers: the clients table in
README.md and the layers table in docs/clients.md (tests/test_docs_links.py and
tests/test_conformance_layers.py fail when either is stale). Run: .venv/bin/python scripts/doc_tables.py
(`--check`: change nothing, exit 1 when a table is stale)."""

from __future__ import annotations

import sys
from pathlib import Path

from ccswitch_tui import tools
from ccswitch_tui.launch.layers import layers_table
from ccswitch_tui.tools.clients_table import clients_table

ROOT = Path(__file__).resolve().parent.parent
TABLES = {  # marker → (file, the table as the registry makes it)
    "clients-table": (ROOT / "README.md", lambda: clients_table(tools.load().specs())),
    "layers-table": (ROOT / "docs" / "clients.md", lambda: layers_table(tools.load().specs())),
}


def replaced(text: str, marker: str, table: str) -> str:
    begin, end = f"<!-- {marker}:begin -->\n", f"\n<!-- {marker}:end -->"
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return head + begin + table + end + tail


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for marker, (path, make) in TABLES.items():
        text = path.read_text(encoding="utf-8")
        new = replaced(text, marker, make())
        if new != text:
            stale.append(path.relative_to(ROOT))
            if not check:
                path.write_text(new, encoding="utf-8")
    for path in stale:
        print(f"{path}: {'stale' if check else 'rewritten'}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
