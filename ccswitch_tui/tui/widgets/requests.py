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

    def on_mount(self) -> None:
        self.add_columns(*COLUMNS)

    def show(self, launch_id: str | None, records: Sequence[Mapping[str, Any]], styles: Mapping[str, str]) -> None:
        if launch_id != self.launch_id:
            self.clear()
            self.launch_id, self.count = launch_id, 0
        follow = self.count == 0 or self.cursor_row >= self.count - 1
        for r in records[self.count:]:
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
                key=f"{launch_id}:{r.get('id')}",
            )
        self.count = len(records)
        if follow and self.count:
            self.move_cursor(row=self.count - 1)
