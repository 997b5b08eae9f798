"""The house rules of docs/architecture.md, checked on the source: Textual only under tui/, httpx only in
check.py (and the TUI, which reaches it through check.py)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "ccswitch_tui"


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_textual_and_httpx_stay_in_their_layers():
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 30
    offenders = []
    for path in modules:
        rel = path.relative_to(PACKAGE).as_posix()
        roots = imported_roots(path)
        if "textual" in roots and not rel.startswith("tui/"):
            offenders.append(f"{rel} imports textual")
        if "httpx" in roots and rel != "diagnose/check.py":
            offenders.append(f"{rel} imports httpx")
    assert offenders == []


def test_the_check_works(tmp_path):
    """The walker really sees imports (so the test above can fail)."""
    sample = tmp_path / "x.py"
    sample.write_text("import httpx\nfrom textual.app import App\ndef f():\n    import json\n")
    assert imported_roots(sample) == {"httpx", "textual", "json"}
