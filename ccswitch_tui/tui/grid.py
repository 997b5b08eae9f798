"""Aligned grids for the detail panes: a name column, a value column and a source/kind column, laid
out for the width the pane has when it is drawn.

A ``Sheet`` is a Rich renderable (headings, prose lines and Rich tables) that sizes its tables at
render time: tags, marks and codes keep their whole width, names keep theirs up to a share of the
line, and values take the rest, ellipsised in the middle (``middle``) so the host and the tail stay
visible and a value never wraps into the next column. Prose (a finding's summary, a problem) wraps
inside its own column. ``FitTable`` does the same for a ``DataTable`` (a selectable grid), whose
selected row's whole values the panes show in a detail line.

Every piece of text goes through ``visible`` here: the cells hold what settings files, processes and
providers wrote."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text
from textual.widgets import DataTable

from ccswitch_tui.terminal_text import visible
from ccswitch_tui.valueclass import field, valueclass

ELLIPSIS = "…"
# fixed: marks, codes, sources (whole); name, tag: whole up to NAME_SHARE (TAG_SHARE) of the line, then
# cut in the middle; value: the rest, cut in the middle; line: the rest, cut at the end (a one-line
# summary); prose: the rest, wrapped in its column
# note: like tag, but wrapped in its column rather than cut (a reason)
Fit = Literal["fixed", "name", "tag", "note", "value", "line", "prose"]
FLEX: tuple[Fit, ...] = ("value", "line", "prose")
NAME_SHARE = 0.35
TAG_SHARE = 0.3
MIN_FLEX = 8
MIN_TAG = 16  # a tag or note cut shorter reads as nothing (`ANTH…URL`)
VALUE_ROOM = 32  # what a value keeps before a name is cut for it (a URL's host, a path's ends)
GAP = 2


def _scheme_end(text: str) -> int:
    """Where a URL's ``scheme://`` ends (0 for text that is not a URL)."""
    scheme = text.find("://")
    return scheme + 3 if 0 < scheme < 8 and " " not in text[:scheme] else 0


def drops_scheme(texts: Iterable[str], width: int) -> bool:
    """Whether a column of ``width`` shows its URLs without their scheme: when any one of them does
    not fit whole, none shows it (one row without ``http://`` beside others with it read as two
    kinds of address)."""
    return any(_scheme_end(t) and len(t) > width for t in texts)


def middle(text: str, width: int, keep_scheme: bool = False) -> str:
    """``text`` in at most ``width`` cells, its middle replaced by ``…`` (the head — a URL's host, a
    path's root — and the tail stay). A URL that does not fit loses its scheme first: its host
    matters more (unless ``keep_scheme``)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    scheme = _scheme_end(text)
    if scheme and not keep_scheme:
        text = text[scheme:]
        if len(text) <= width:
            return text
    tail = (width - 1) // 2
    head = width - 1 - tail
    return text[:head] + ELLIPSIS + (text[-tail:] if tail else "")


def end(text: str, width: int) -> str:
    return text if len(text) <= width else (text[: max(width - 1, 0)] + ELLIPSIS)[:width]


def cut(text: str, width: int, fit: Fit, no_scheme: bool = False) -> str:
    """``text`` fitted to its column: prose as it is (it wraps), a summary cut at its end, a value in
    its middle (``old → new``: each side in its middle, the arrow kept). ``no_scheme``: the column
    shows its URLs without their scheme (``drops_scheme``)."""
    if no_scheme and fit not in ("prose", "note", "line") and (at := _scheme_end(text)):
        text = text[at:]
    if fit in ("prose", "note") or len(text) <= width:
        return text
    if fit == "line":
        return end(text, width)
    if fit == "value" and " → " in text:  # old above, "→ new" under it: each side keeps its ends
        old, new = text.split(" → ", 1)
        return middle(old, width) + "\n→ " + middle(new, max(width - 2, 1))
    return middle(text, width)


@valueclass(frozen=True)
class Cell:
    text: str
    style: str = ""

    @staticmethod
    def of(value: Cell | str | tuple[str, str]) -> Cell:
        if isinstance(value, Cell):
            return Cell(visible(value.text), value.style)
        if isinstance(value, tuple):
            return Cell(visible(value[0]), value[1])
        return Cell(visible(value))


CellLike = Cell | str | tuple[str, str]


def widths(columns: Sequence[Fit], rows: Sequence[Sequence[Cell]], total: int, gap: int = GAP,
           headers: Sequence[str] = ()) -> list[int]:
    """Each column's width in ``total`` cells, given in turn: fixed columns whole; names and notes
    whole while the columns after them keep their room (a value ``VALUE_ROOM``: a name cut in the
    middle cannot be read, a value cut in the middle keeps its ends), else their share of the line;
    then the values, prose and summaries what they hold of the rest, tags up to their share; what is
    left goes back to the columns still cut."""
    n = len(columns)
    longest = [max([len(r[i].text) for r in rows if i < len(r)] + [len(headers[i]) if i < len(headers) else 0])
               for i in range(n)]
    out = [0] * n
    left = max(total - gap * (n - 1), n)
    order = [i for fit in ("fixed", "name", "note", "value", "tag", "prose", "line")
             for i, f in enumerate(columns) if f == fit]

    def share(j: int) -> int:
        return max(int(total * (NAME_SHARE if columns[j] == "name" else TAG_SHARE)), MIN_FLEX)

    for pos, i in enumerate(order):
        fit = columns[i]
        later = [j for j in order[pos + 1:] if columns[j] != "fixed"]
        if fit == "fixed":
            want = longest[i]
        elif fit in ("name", "note"):
            need = sum(min(longest[j], VALUE_ROOM if columns[j] in FLEX else share(j)) for j in later)
            want = min(longest[i], max(share(i), left - need))
        elif fit == "tag":
            want = min(longest[i], max(share(i), MIN_TAG))
        else:
            want = longest[i]
        after = sum(min(MIN_TAG if columns[j] in ("tag", "note") else MIN_FLEX, longest[j]) for j in later)
        out[i] = max(min(want, left - after), min(longest[i], 1)) if fit != "fixed" else want
        left -= out[i]
    for i in order:  # the rest to what is still cut
        if left <= 0:
            break
        add = min(left, longest[i] - out[i])
        if add > 0 and columns[i] != "fixed":
            out[i] += add
            left -= add
    if any(f in FLEX for f in columns) and left > 0:  # a prose or value column may take the whole line
        last = max(i for i, f in enumerate(columns) if f in FLEX)
        out[last] += left
    return out


def fit_columns(columns: Sequence[Fit], rows: Sequence[Sequence[Cell]], total: int, gap: int = GAP,
        headers: Sequence[str] = ()) -> tuple[list[int], list[bool]]:
    """The columns' widths, and which columns show their URLs without a scheme (``drops_scheme``);
    a column that drops them is measured without them, so what they free goes to the others."""
    ws = widths(columns, rows, total, gap, headers)
    bare = [drops_scheme((r[i].text for r in rows if i < len(r)), ws[i]) for i in range(len(columns))]
    if any(bare):
        short = [tuple(Cell(c.text[_scheme_end(c.text):] if i < len(bare) and bare[i] else c.text, c.style)
                       for i, c in enumerate(r)) for r in rows]
        ws = widths(columns, short, total, gap, headers)
    return ws, bare


@valueclass
class Grid:
    """Rows of cells under optional headers, one column fit per column."""

    columns: tuple[Fit, ...]
    rows: list[tuple[Cell, ...]] = field(default_factory=list)
    headers: tuple[str, ...] = ()
    align: str | None = None  # grids of a sheet with the same ``align`` share their column widths

    def add(self, *cells: CellLike) -> Grid:
        self.rows.append(tuple(Cell.of(c) for c in cells))
        return self

    def table(self, total: int, resolve: Any, rows: Sequence[Sequence[Cell]] | None = None) -> Table:
        """A Rich table ``total`` cells wide, its widths those of ``rows`` (this grid's, or those of
        every grid aligned with it)."""
        ws, bare = fit_columns(self.columns, self.rows if rows is None else rows, total, headers=self.headers)
        table = Table.grid(padding=(0, GAP, 0, 0)) if not self.headers else Table(
            box=None, padding=(0, GAP, 0, 0), show_edge=False, header_style=resolve("$text-muted"), pad_edge=False)
        for i, fit in enumerate(self.columns):
            header = self.headers[i] if i < len(self.headers) else ""
            wraps = fit in ("prose", "note")
            table.add_column(header, width=ws[i], no_wrap=not wraps, overflow="fold" if wraps else "ellipsis")
        for row in self.rows:
            cells = list(row) + [Cell("")] * (len(self.columns) - len(row))
            table.add_row(*(Text(cut(c.text, ws[i], self.columns[i], bare[i]), style=resolve(c.style))
                            for i, c in enumerate(cells)))
        return table

    def plain(self) -> str:
        lines = ["  ".join(self.headers)] if self.headers else []
        return "\n".join(lines + ["  ".join(c.text for c in row) for row in self.rows])


@valueclass
class Line:
    """A line of prose (wraps as text does) or a heading, made of styled pieces."""

    pieces: tuple[Cell, ...]

    def text(self, resolve: Any) -> Text:
        return Text.assemble(*((c.text, resolve(c.style)) for c in self.pieces))

    def plain(self) -> str:
        return "".join(c.text for c in self.pieces)


Block = Grid | Line


def rich_style(style: str, theme: Mapping[str, str]) -> str:
    """A pane style (``bold $text-accent``) as a Rich style, the theme's variables put in."""
    out = []
    for word in style.split():
        if word.startswith("$"):
            value = theme.get(word[1:], "")
            if not value or " " in value or value.startswith("auto"):  # "auto 60%": Rich's dim
                out.append("dim")
            else:
                out.append(value)
        else:
            out.append(word)
    return " ".join(out)


class Sheet:
    """Headings, prose and grids, laid out for the width they are drawn at (Rich calls
    ``__rich_console__`` with it on every resize). ``str()`` is the whole text, values uncut."""

    def __init__(self, blocks: Iterable[Block], theme: Mapping[str, str] | None = None):
        self.blocks = list(blocks)
        self.theme = dict(theme or {})

    def resolve(self, style: str) -> str:
        return rich_style(style, self.theme)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        aligned: dict[str, list[tuple[Cell, ...]]] = {}
        for block in self.blocks:
            if isinstance(block, Grid) and block.align:
                aligned.setdefault(block.align, []).extend(block.rows)
        for block in self.blocks:
            if isinstance(block, Line):
                yield block.text(self.resolve)
            elif block.rows:
                yield block.table(width, self.resolve, aligned.get(block.align) if block.align else None)

    def __str__(self) -> str:
        return "\n".join(b.plain() for b in self.blocks)


class SheetBuilder:
    """What the render functions build a pane with: ``line``/``heading``/``blank`` for prose, ``grid``
    for a new aligned table (rows added with ``Grid.add``)."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []

    def line(self, *pieces: CellLike) -> SheetBuilder:
        self.blocks.append(Line(tuple(Cell.of(p) for p in pieces)))
        return self

    def blank(self) -> SheetBuilder:
        return self.line("")

    def heading(self, text: str, style: str = "bold underline $text-accent") -> SheetBuilder:
        if self.blocks:
            self.blank()
        return self.line((text, style))

    def grid(self, *columns: Fit, headers: Sequence[str] = (), align: str | None = None) -> Grid:
        g = Grid(tuple(columns), headers=tuple(headers), align=align)
        self.blocks.append(g)
        return g

    def sheet(self, theme: Mapping[str, str] | None = None) -> Sheet:
        return Sheet(self.blocks, theme)


class FitTable(DataTable):
    """A ``DataTable`` whose columns fit its width: fixed columns whole, the flexible one cut in the
    middle (its whole value is the app's to show for the selected row); refitted on resize."""

    def __init__(self, columns: Sequence[tuple[str, Fit]], **kwargs: Any):
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.spec = tuple(columns)
        self.data: list[tuple[tuple[Cell, ...], str | None]] = []
        self.theme_vars: Mapping[str, str] = {}
        self._fitted_for = -1

    def set_rows(self, rows: Iterable[tuple[Sequence[CellLike], str | None]], theme: Mapping[str, str]) -> None:
        self.data = [(tuple(Cell.of(c) for c in cells), key) for cells, key in rows]
        self.theme_vars = theme
        self._fill()

    @property
    def content(self) -> str:
        """The whole text of the rows (values uncut), as a Static's content reads."""
        return "\n".join("  ".join(c.text for c in cells) for cells, _ in self.data)

    def row_cells(self, index: int) -> tuple[Cell, ...] | None:
        return self.data[index][0] if 0 <= index < len(self.data) else None

    def on_resize(self) -> None:
        if self.size.width != self._fitted_for:
            self._fill()

    def _fill(self) -> None:
        if not self.is_mounted:
            return
        keep = self.cursor_row
        total = max(self.size.width - 2, 20)  # the scrollbar's room
        pad = self.cell_padding * 2
        cols = tuple(fit for _, fit in self.spec)
        ws, bare = fit_columns(cols, [cells for cells, _ in self.data], total - pad * len(cols), gap=0,
                       headers=[label for label, _ in self.spec])
        self._fitted_for = self.size.width
        self.clear(columns=True)
        for (label, _), w in zip(self.spec, ws, strict=True):
            self.add_column(label, width=max(w, 1))
        for cells, key in self.data:
            self.add_row(*(Text(cut(c.text, ws[i], cols[i], bare[i]), style=rich_style(c.style, self.theme_vars))
                           for i, c in enumerate(cells)), key=key)
        if self.data:
            self.move_cursor(row=min(max(keep, 0), len(self.data) - 1), scroll=False)
