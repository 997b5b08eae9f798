"""The requests of a recorded run, one row each: what was asked, what came back, how long it took."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text
from textual.widgets import DataTable

from ccswitch_tui.terminal_text import visible

COLUMNS = ("#", "started", "request", "model", "status", "outcome", "ttfb ms", "ms", "in", "out")


def _num(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if isinstance(value, float) else str(value)


def _model(r: Mapping[str, Any]) -> str:
    asked, served = r.get("model_requested"), r.get("model_served")
    if asked and served and asked != served:
        return f"{asked} → {served}"
    return str(asked or served or "-")


class RequestsTable(DataTable):
    """Rows keyed by record id; refreshing keeps the cursor where it was and adds what is new."""

    def __init__(self, **kwargs: Any):
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.display = False  # shown for a recorded run only
        self.launch_id: str | None = None
        self.count = 0
        self.shown: list[str] = []  # the rows' keys, in order

    def on_mount(self) -> None:
        self.add_columns(*COLUMNS)

    def show(self, launch_id: str | None, records: Sequence[Mapping[str, Any]], styles: Mapping[str, str]) -> None:
        """The records in the order the requests started (the file has them in the order they ended:
        concurrent requests read 1 3 5 7 2 4 6 8); new ones are added, and when one that started
        earlier than a shown row arrives the table is filled again, the cursor kept on its row."""
        ordered = sorted(records, key=_order)
        keys = [f"{launch_id}:{r.get('id')}" for r in ordered]
        if launch_id != self.launch_id or keys[:self.count] != self.shown:
            at = self.shown[self.cursor_row] if launch_id == self.launch_id and 0 <= self.cursor_row < self.count \
                else None
            follow = self.count == 0 or self.cursor_row >= self.count - 1
            self.clear()
            self.launch_id, self.count, self.shown = launch_id, 0, []
        else:
            at, follow = None, self.count == 0 or self.cursor_row >= self.count - 1
        for key, r in zip(keys[self.count:], ordered[self.count:], strict=True):
            self._add(key, r, styles)
        self.count, self.shown = len(ordered), keys
        if at is not None and at in keys and not follow:
            self.move_cursor(row=keys.index(at))
        elif follow and self.count:
            self.move_cursor(row=self.count - 1)

    def _add(self, key: str, r: Mapping[str, Any], styles: Mapping[str, str]) -> None:
        outcome = str(r.get("outcome") or "-")
        style = styles["ok"] if outcome == "ok" else styles["warn"]
        path = visible(str(r.get("path") or ""))  # records hold what the client and the provider sent
        self.add_row(
            Text(visible(_num(r.get("id")))), Text(visible(str(r.get("started") or "")[11:23])),
            Text(visible(f"{r.get('method', '')} {path}") + (" ⇶" if r.get("stream") else "")),
            Text(visible(_model(r))), Text(visible(_num(r.get("status"))), style=style),
            Text(visible(outcome), style=style),
            Text(_num(r.get("ttfb_ms"))), Text(_num(r.get("duration_ms"))),
            Text(_num(r.get("input_tokens"))), Text(_num(r.get("output_tokens"))),
            key=key,
        )


def _order(record: Mapping[str, Any]) -> tuple[int, Any, str]:
    """Start order: the bridge numbers requests as they start; a record without a number (a hand-made
    or damaged one) after them, by its start time."""
    rid = record.get("id")
    return (0, rid, "") if isinstance(rid, int) and not isinstance(rid, bool) else (1, 0, str(record.get("started")))
