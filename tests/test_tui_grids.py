"""The detail panes read as grids at 80x24 and 120x36: Pilot renders each pane (Overview,
Environment, Diff, Running's detail, Runs with its detail) for a contaminated shell, a profile whose
paths are long, recorded runs and a process with findings, and the screen is checked as text:

- every row of a grid has its source, kind or reason on its own line, at its column's position
  (never alone at the pane's margin, never at another column on the next row);
- no token (a variable name, a source, a reason, a finding's code) is split across two lines;
- the most important column of each pane is whole at 80x24 (the Runs tab's status and drift).

The checks are shown to fail on the layout these panes had before (captured text of a wrapped
pane) and on a deliberately broken layout (the grids' fitting switched off)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_tui_snapshots import FixedProcesses
from test_tui_support import settle

from ccswitch_tui.keys.keyring import KeyStore
from ccswitch_tui.paths import Paths
from ccswitch_tui.profiles.presets import new_profile_text
from ccswitch_tui.profiles.store import Store
from ccswitch_tui.runs.manifests import write_manifest
from ccswitch_tui.tui import grid as grid_module
from ccswitch_tui.tui.app import CcsApp
from ccswitch_tui.tui.grid import Cell, FitTable, Grid, Sheet

SIZES = [(80, 24), (120, 36)]
PANES = ("overview", "environment", "diff", "running", "runs")
KEY_VALUE = "sk-grids-0123456789abcdef9f3a"

SHELL = {
    "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/user", "USER": "user", "TERM": "xterm-256color",
    "LANG": "C.UTF-8", "SHELL": "/bin/bash", "EDITOR": "vim",
    "OPENAI_BASE_URL": "https://stale-gateway.example/v1", "OPENAI_API_KEY": "sk-stale-openai-key-00001234",
    "ANTHROPIC_BASE_URL": "https://old-gateway.example", "HTTPS_PROXY": "http://proxy.example:3128",
    "SSL_CERT_FILE": "/etc/ssl/corporate-inspection/ca-bundle.pem",
    "NODE_EXTRA_CA_CERTS": "/etc/ssl/corporate-inspection/extra-ca.pem",
}


@pytest.fixture
def glance(tmp_path: Path, key_id: str) -> Iterator[Paths]:
    """A profile whose config dirs sit under a long state path, its key stored, three runs of Codex
    (the last one drifted: another model, another exit status)."""
    deep = tmp_path / "home" / "a-rather-long-folder-name" / "state-of-the-glance-profile"
    paths = Paths(profiles=tmp_path / "home" / "profiles", state=deep)
    Store(paths).save_text("glance", new_profile_text("glance", "taotoken", key=key_id), create=True)
    KeyStore(paths, os.environ).set(key_id, KEY_VALUE)
    base = {"profile": "glance", "tool": "codex", "argv": ["codex"], "cwd": "/home/user/project",
            "base_urls": {"model_providers.taotoken.base_url": "https://taotoken.net/api"},
            "models": {"model": "gpt-4.1"}, "key_id": key_id, "key_fingerprint": "fp:5d1e8b0c2a47",
            "env_hash": "sha256:6c1f", "tool_version": "@openai/codex@0.171.0", "exit_status": 0}
    for day, extra in ((1, {}), (2, {}), (3, {"models": {"model": "gpt-4.1-mini"}, "exit_status": 130})):
        write_manifest(paths, {**base, **extra, "launch_id": f"2025010{day}T090000Z-glance0{day}",
                               "started": f"2025-01-0{day}T09:00:0{day}.123456Z"})
    yield paths


def make_app(paths: Paths) -> CcsApp:
    keys = KeyStore(paths, os.environ)
    svc = FixedProcesses(paths, Store(paths), keys, dict(SHELL), paths.state.parent)
    return CcsApp(paths, environ=dict(SHELL), cursor_blink=False, service=svc)


# --- the screen as text, and what it must show ---------------------------------------------------

def pane_lines(app: Any) -> list[str]:
    """The detail pane's rows of the screen, below its tabs, as text."""
    strips = app.screen._compositor.render_strips()
    region = app.query_one("#tabs").region
    return [s.text[region.x:region.right] for s in strips[region.y + 2:region.bottom]]


def widget_lines(app: Any, widget: Any) -> list[str]:
    """The screen's rows where the widget is shown (its visible part), as text."""
    strips = app.screen._compositor.render_strips()
    region = widget.region.intersection(app.query_one("#tabs").region)
    return [s.text[region.x:region.right] for s in strips[region.y:region.bottom]]


def shown_grids(app: Any, tab: str) -> list[tuple[list[tuple[Cell, ...]], str, Any]]:
    """The rows of every grid the tab shows (each Sheet's grids, each FitTable), with a name for the
    failure message and the widget that shows them."""
    out: list[tuple[list[tuple[Cell, ...]], str, Any]] = []
    for widget in app.query(f"#{tab} *"):
        if isinstance(widget, FitTable) and widget.display:
            out.append(([cells for cells, _ in widget.data], f"#{widget.id}", widget))
        content = getattr(widget, "content", None) if not isinstance(widget, FitTable) else None
        if isinstance(content, Sheet):
            by_align: dict[str, list[tuple[Cell, ...]]] = {}
            for i, block in enumerate(content.blocks):
                if isinstance(block, Grid) and block.rows:
                    key = block.align or f"{widget.id}:{i}"
                    by_align.setdefault(key, []).extend(block.rows)
            out += [(rows, f"#{widget.id} {key}", widget) for key, rows in by_align.items()]
    return out


MARKS = ("-", "~", "+", "=", "!", "✗", "·", "✓")


def same_cell(shown: str, text: str) -> bool:
    """Whether ``shown`` is ``text``, whole or cut in the middle (``head…tail``) or at its end."""
    if shown == text:
        return True
    if "…" not in shown:
        return False
    left, _, right = shown.partition("…")
    return len(left) >= 2 and text.startswith(left) and text.endswith(right)


def starts_with_cell(line: str, name: str, mark: str | None) -> bool:
    """Whether the line is the row of ``name``: it starts with it as a cell of its own (two spaces
    after it). A line that starts with the name run into what follows it fails."""
    rest = line.strip()
    if mark is not None:
        if not rest.startswith(mark + " "):
            return False
        rest = rest[1:].lstrip()
    cell = rest.split("  ")[0].rstrip()
    if same_cell(cell, name.strip()):
        return True
    assert not (cell.startswith(name.strip()) and cell[len(name.strip()):len(name.strip()) + 1] in "=:("), \
        f"{name!r} runs into the next column: {line!r}"
    return False


def head(text: str) -> str:
    """What stays of a cell however it is cut: its first word's first characters (a URL's host's:
    a URL cut to its column loses its scheme first)."""
    text = text.split("://", 1)[1] if 0 < text.find("://") < 8 else text
    return text.split()[0][:5] if text.split() else ""


def in_order(line: str, cells: list[str]) -> list[int]:
    """Where each cell's head is found on the line, each after the one before (after the whole cell
    when it is shown whole); [] when one is missing."""
    at, out = 0, []
    for c in cells:
        x = line.find(head(c), at)
        if x < 0:
            return []
        gap = line.rfind("  ", at, x)  # where the cell starts (a URL's host comes after its scheme)
        if gap >= 0 and line[gap:x].strip() and not line[gap:x].strip().startswith("…"):
            x = gap + len(line[gap:x]) - len(line[gap:x].lstrip())
        out.append(x)
        gap = line.find("  ", x)  # a cut cell ends where its column's gap begins
        at = x + len(c) if line.startswith(c, x) else (gap if gap > 0 else x + len(head(c)))
    return out


def score(line: str, cells: list[str]) -> int:
    """How much of the cells the line shows where their heads are (to tell the row's line from a
    line of another grid that shares its heads)."""
    at = in_order(line, cells)
    return sum(len(os.path.commonprefix([line[x:], c])) for x, c in zip(at, cells, strict=True))


def theirs(line: str, mine: list[str], name: str, others: list[tuple[Cell, ...]]) -> bool:
    """The line is another grid's row of the same name: it shows that row's cells better than ours."""
    ours = score(line, mine) if in_order(line, mine) else 0
    for o in others:
        heads = [c.text for c in o if len(c.text.strip()) >= 3]
        if o[0].text == name and len(heads) >= 2 and in_order(line, heads) and score(line, heads) > ours:
            return True
    return False


def check_columns(lines: list[str], rows: list[tuple[Cell, ...]], what: str,
                  others: list[tuple[Cell, ...]] = ()) -> int:
    """Each visible row (found by its name's head at the grid's left edge) has its last cell's head
    on the same line, at the same column as the other rows'. Returns how many rows were seen.
    ``others``: the rows of the other grids in the same widget; a line that is wholly one of theirs
    (a row of the same name in another section) is not this row's."""
    seen, xs = 0, {}
    for cells in rows:
        texts = [c.text for c in cells]
        named = [i for i, t in enumerate(texts) if len(t.strip()) >= 3]
        if len(named) < 2:
            continue
        name, tag = texts[named[0]], texts[named[-1]]
        mark = texts[0] if texts[0] in MARKS else None  # a row led by its mark: found by it too
        mine = [texts[i] for i in named]
        hits = [line for line in lines if starts_with_cell(line, name, mark) and not theirs(line, mine, name, others)]
        if not hits:
            continue  # scrolled out of view
        found = [line for line in hits if in_order(line, [texts[i] for i in named])]
        assert found, f"{what}: {tag!r} is not on the line of {name!r}: {hits}"
        line = max(found, key=lambda x: score(x, [texts[i] for i in named]))  # the line the row is on
        xs.setdefault(named[-1], set()).add(in_order(line, [texts[i] for i in named])[-1])
        seen += 1
        alone = [x for x in lines if x.strip() == tag.strip() and x.strip()]
        assert not alone, f"{what}: {tag!r} stands alone on a line, out of its column"
    for column, at in xs.items():
        assert len(at) == 1, f"{what}: column {column} starts at {sorted(at)}, not at one place"
    return seen


def check_no_split(lines: list[str], tokens: set[str]) -> None:
    """No token ends one line and goes on at the start of the next."""
    stripped = [line.rstrip(" ▁▂▃▄▅▆▇█▊▌▎") for line in lines]
    for i in range(len(stripped) - 1):
        a, b = stripped[i].rstrip(), stripped[i + 1].lstrip()
        for token in tokens:
            for k in range(2, len(token) - 1):
                if a.endswith(token[:k]) and b.startswith(token[k:]):
                    raise AssertionError(f"{token!r} is split across lines: {a!r} / {b!r}")


def tokens_of(grids: list[tuple[list[tuple[Cell, ...]], str, Any]]) -> set[str]:
    out = set()
    for rows, _, _ in grids:
        for cells in rows:
            for c in cells:
                out |= {w for w in c.text.replace(",", " ").split() if len(w) >= 5 and "…" not in w}
    return out


async def show(pilot: Any, tab: str, tool: str | None = None) -> None:
    app = pilot.app
    if tool:
        app.action_set_tool(tool)
    app.detail_pane.show_tab(tab)
    await settle(pilot)
    if tab == "running":
        for _ in range(100):  # the inspection comes from a worker after the table is filled
            if app.query("#findings") and app.query_one("#findings").data:
                break
            await pilot.pause(0.05)
        await settle(pilot)


def check_pane(app: Any, tab: str) -> int:
    lines = pane_lines(app)
    grids = shown_grids(app, tab)
    assert grids, f"{tab}: no grid shown"
    seen = sum(check_columns(widget_lines(app, widget), rows, f"{tab} {name}",
                             [r for other, _, w in grids if w is widget and other is not rows for r in other])
               for rows, name, widget in grids)
    check_no_split(lines, tokens_of(grids))
    return seen


# --- the panes -----------------------------------------------------------------------------------

@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_every_pane_keeps_its_columns(glance: Paths, size: tuple[int, int]):
    app = make_app(glance)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        app.select_profile("glance")
        await settle(pilot)
        for tab, tool in (("overview", None), ("environment", "claude"), ("environment", "codex"),
                          ("diff", "claude"), ("diff", "run"), ("running", None), ("runs", None)):
            await show(pilot, tab, tool)
            seen = check_pane(app, tab)
            assert seen >= 3, f"{tab} at {size}: only {seen} grid rows on screen\n" + "\n".join(pane_lines(app))


async def test_at_80x24_the_important_column_is_whole(glance: Paths):
    app = make_app(glance)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.select_profile("glance")
        await settle(pilot)
        await show(pilot, "runs")
        text = "\n".join(pane_lines(app))
        assert "130" in text and "models, exit_status" in text  # status and drift, whole
        assert "2025-01-03 09:00:03" in text and ".123456" not in text  # to the second
        await show(pilot, "environment", "claude")
        table = app.query_one("#env-body", FitTable)
        row = [i for i, (_, key) in enumerate(table.data) if key == "CLAUDE_CONFIG_DIR"][0]
        table.move_cursor(row=row)
        await settle(pilot)
        whole = app.detail_pane.view.plan.env["CLAUDE_CONFIG_DIR"]
        assert "…" in "\n".join(pane_lines(app).__iter__())  # cut in the grid …
        assert whole in str(app.query_one("#env-detail").content)  # … whole for the selected row
        assert whole.replace("/", "") in "".join(pane_lines(app)).replace("/", "").replace(" ", "").replace("│", "")
        await show(pilot, "diff", "claude")
        app.query_one("#diff .body").scroll_end(animate=False)
        await settle(pilot)
        diff = "\n".join(pane_lines(app))
        check_pane(app, "diff")  # scrolled to its end, the rows below keep their columns too
        # the trust variables the launch carries: their own group, not "harmless"
        assert "trust: which certificates the client trusts (2)" in diff and "carried" in diff
        body = str(app.query_one("#diff-body").content)
        assert "SSL_CERT_FILE" in body.split("client trusts (2)", 1)[1].split("harmless", 1)[0]


async def test_findings_are_one_row_each_with_the_whole_message_below(glance: Paths):
    app = make_app(glance)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        app.select_profile("glance")
        await settle(pilot)
        await show(pilot, "running")
        table = app.query_one("#findings", FitTable)
        insp = app.query_one("#running-view").inspection
        assert len(table.data) == len(insp.findings) >= 2
        for (cells, _), f in zip(table.data, insp.findings, strict=True):
            assert cells[1].text == f.code and cells[2].text == (f.variable or f.path or f.where)
            assert "\n" not in cells[3].text and len(cells[3].text) <= len(f.message)
        lines = pane_lines(app)
        for f in insp.findings[:3]:  # one screen line per finding: its code and its subject on it
            assert sum(1 for line in lines if f.code in line and (f.variable or "")[:5] in line) >= 1, f.code
        table.move_cursor(row=1)
        await settle(pilot)
        detail = " ".join(str(app.query_one("#finding-detail").content).split())
        assert " ".join(insp.findings[1].message.split()) in detail


# --- the checks fail where they should -----------------------------------------------------------

# What the Overview and the Diff showed at 80x24 before the grids (captured): a source tag and a
# reason wrapped to the pane's margin, under the name of the client they labelled.
OLD_OVERVIEW = """\
 Base URLs
   provider  https://taotoken.net/api
   claude    https://taotoken.net/api
 ANTHROPIC_BASE_URL
   codex     https://taotoken.net/api
 model_providers.taotoken.base_url
 Injected variables
   claude
     CLAUDE_CONFIG_DIR=/tmp/i25/home/state/tools/glance/cl
 aude  routing""".splitlines()
OLD_DIFF = """\
 removed — not passed to the child (3)
 - HTTPS_PROXY=http://proxy.example:3128  ← proxy: contamination kept
 out
 - OPENAI_API_KEY=sk-…1234  ← openai:
 contamination kept out""".splitlines()


def test_the_checks_fail_on_the_old_layout():
    urls = [(Cell("claude"), Cell("https://taotoken.net/api"), Cell("ANTHROPIC_BASE_URL")),
            (Cell("codex"), Cell("https://taotoken.net/api"), Cell("model_providers.taotoken.base_url"))]
    with pytest.raises(AssertionError, match="not on the line"):
        check_columns(OLD_OVERVIEW, urls, "old overview")
    with pytest.raises(AssertionError, match="split across lines"):
        check_no_split(OLD_OVERVIEW, {"CLAUDE_CONFIG_DIR", "/tmp/i25/home/state/tools/glance/claude"})
    reasons = [(Cell("-"), Cell("HTTPS_PROXY"), Cell("http://proxy.example:3128"), Cell("proxy: kept out")),
               (Cell("-"), Cell("OPENAI_API_KEY"), Cell("sk-…1234"), Cell("openai: kept out"))]
    with pytest.raises(AssertionError, match="runs into the next column"):
        check_columns(OLD_DIFF, reasons, "old diff")


async def test_the_checks_fail_when_the_grids_stop_fitting(glance: Paths, monkeypatch: pytest.MonkeyPatch):
    """Every column at its full width, cut nowhere: Rich squeezes the table itself and the tags move."""
    def unfitted(columns: Any, rows: Any, total: int, gap: int = 2, headers: Any = ()) -> list[int]:
        return [max([len(r[i].text) for r in rows if i < len(r)] + [1]) for i in range(len(columns))]

    monkeypatch.setattr(grid_module, "widths", unfitted)
    monkeypatch.setattr(grid_module, "cut", lambda text, width, fit, no_scheme=False: text)
    app = make_app(glance)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.select_profile("glance")
        await settle(pilot)
        failures = []
        for tab, tool in (("overview", None), ("environment", "claude"), ("diff", "claude")):
            await show(pilot, tab, tool)
            try:
                check_pane(app, tab)
            except AssertionError as exc:
                failures.append(str(exc))
        assert len(failures) >= 2 and any("overview" in f for f in failures), failures


# --- the fitting itself --------------------------------------------------------------------------

def test_a_long_value_keeps_its_ends_and_a_url_its_host():
    path = "/tmp/ccs/state/tools/glance/a-rather-long-folder-name/claude"
    assert grid_module.middle(path, 20) == "/tmp/ccs/s…me/claude" and len(grid_module.middle(path, 20)) == 20
    assert grid_module.middle("https://stale-gateway.example/v1", 24) == "stale-gateway.example/v1"  # host whole
    assert grid_module.middle("short", 20) == "short"
    old_new = grid_module.cut("https://old-gateway.example → https://taotoken.net/api", 16, "value")
    first, second = old_new.split("\n")  # old above, "→ new" under it, both inside the column
    assert first.startswith("old-") and second.startswith("→ ") and max(map(len, (first, second))) <= 16


@pytest.mark.parametrize("total", [40, 52, 77, 120])
def test_the_columns_fit_the_line_and_tags_stay_whole(total: int):
    rows = [(Cell("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"), Cell("1"), Cell("profile")),
            (Cell("CLAUDE_CONFIG_DIR"), Cell("/tmp/" + "x" * 90 + "/claude"), Cell("inherited"))]
    ws = grid_module.widths(("name", "value", "fixed"), rows, total)
    assert sum(ws) + 2 * 2 <= total  # two gaps of two
    assert ws[2] == len("inherited")  # the source column is never cut
    assert ws[1] >= grid_module.MIN_FLEX
    # the name whole, unless that would leave the value less than its room; then not below its share
    name = len("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")
    assert ws[0] == name or ws[1] >= grid_module.VALUE_ROOM or ws[0] <= max(int(total * grid_module.NAME_SHARE),
                                                                             grid_module.MIN_FLEX)
    assert ws[0] >= min(name, max(int(total * grid_module.NAME_SHARE), grid_module.MIN_FLEX))


def test_a_name_is_cut_only_when_the_value_would_lose_its_room():
    """At 120 columns names were cut (`CLAUDE_CODE_D…TIAL_TRAFFIC`) while the value column had room
    to spare; a tag was cut to nothing (`ANTH…URL`)."""
    rows = [(Cell("-"), Cell("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"), Cell("1"), Cell("profile")),
            (Cell("+"), Cell("ANTHROPIC_BASE_URL"), Cell("http://127.0.0.1:43125/api"), Cell("routing")),
            (Cell("+"), Cell("CLAUDE_CONFIG_DIR"), Cell("/tmp/" + "x" * 60 + "/claude"), Cell("routing"))]
    ws = grid_module.widths(("fixed", "name", "value", "note"), rows, 90)
    assert ws[1] == 40 and ws[2] >= grid_module.VALUE_ROOM, ws
    urls = [(Cell("claude"), Cell("http://127.0.0.1:43125/api"), Cell("ANTHROPIC_BASE_URL")),
            (Cell("codex"), Cell("http://127.0.0.1:43125/api"), Cell("model_providers.taotoken.base_url"))]
    ws = grid_module.widths(("name", "value", "tag"), urls, 50)
    assert ws[2] >= grid_module.MIN_TAG, ws


def test_a_column_shows_its_urls_all_with_their_scheme_or_all_without():
    """At 80 columns the provider row lost `http://` while the other rows kept it."""
    from rich.console import Console

    from ccswitch_tui.tui.grid import SheetBuilder

    b = SheetBuilder()
    g = b.grid("name", "value")
    g.add("provider", "http://127.0.0.1:43125/api/v1/extra")
    g.add("claude", "http://127.0.0.1:43125/api")
    console = Console(width=36, record=True, color_system=None, file=__import__("io").StringIO())
    console.print(b.sheet())
    lines = console.export_text().splitlines()
    assert all("http://" not in ln for ln in lines) and "127.0.0.1:43125/api" in lines[1], lines
    console = Console(width=60, record=True, color_system=None, file=__import__("io").StringIO())
    console.print(b.sheet())
    assert all("http://127.0.0.1" in ln for ln in console.export_text().splitlines())
