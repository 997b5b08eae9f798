"""Drift while a locked rerun runs: a recorded rerun's served models and endpoints, request by request,
against its baseline's (``runs.verdict.live_differences``).

The bridge appends each request's record to ``runs/<launch-id>.requests.jsonl`` as it ends; this hook
follows that file from ccs's own process (a thread that reads what was appended every
``POLL`` seconds), says each new served model or endpoint on stderr once, and marks the run: its
manifest gains ``live_drift`` (written at once, so `ccs runs` shows it while the run goes on).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ccswitch_tui.runs.inplace import reserve
from ccswitch_tui.runs.manifests import write_manifest
from ccswitch_tui.runs.verdict import live_differences
from ccswitch_tui.terminal_text import visible
from ccswitch_tui.tools.spec import HookContext, LaunchHook

POLL = 0.2  # seconds between two looks at the records file
MAX_MARKS = 20  # drift marks a manifest keeps (each distinct field and value once)
READ_LIMIT = 4 * 1024 * 1024  # bytes read per look; a longer backlog is read on the next


class DriftWatch(LaunchHook):
    """``expected``: ``runs.verdict.live_expectations`` of the baseline; ``what``: how it is named."""

    def __init__(self, expected: Mapping[str, frozenset[str]], what: str):
        self.expected = expected
        self.what = what
        self.marks: list[dict[str, Any]] = []
        self._seen: set[tuple[str, str]] = set()
        self._path: Path | None = None
        self._offset = 0
        self._partial = b""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._ctx: HookContext | None = None

    def child_started(self, ctx: HookContext, pgid: int) -> None:
        recording = ctx.manifest.get("recording")
        if not isinstance(recording, dict) or not isinstance(recording.get("records"), str):
            return  # not recorded: nothing to follow
        self._ctx = ctx
        self._path = ctx.paths.runs / Path(recording["records"]).name
        self._thread = threading.Thread(target=self._follow, name="ccs-drift-watch", daemon=True)
        self._thread.start()

    def after(self, ctx: HookContext) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def close(self, ctx: HookContext) -> None:
        """The bridge has stopped: the records it wrote last are read too."""
        self._stop.set()
        if self._path is not None:
            while self._look(announce_to=ctx):
                pass
        if self.marks:
            ctx.manifest["live_drift"] = list(self.marks)

    def _follow(self) -> None:
        while not self._stop.wait(POLL):
            self._look(announce_to=self._ctx, live=True)

    def _look(self, announce_to: HookContext | None, live: bool = False) -> bool:
        """Read what was appended since the last look; True when a full read was made (more may follow)."""
        with self._lock:
            assert self._path is not None
            try:
                fd = os.open(self._path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
            except OSError:
                return False
            try:
                chunk = os.pread(fd, READ_LIMIT, self._offset)
            except OSError:
                return False
            finally:
                os.close(fd)
            self._offset += len(chunk)
            lines = (self._partial + chunk).split(b"\n")
            self._partial = lines.pop()
            new = []
            for line in lines:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict):
                    new += self._judge(record)
            if new and live and announce_to is not None:
                self._mark_live(announce_to)
            return len(chunk) == READ_LIMIT

    def _judge(self, record: Mapping[str, Any]) -> list[dict[str, Any]]:
        new = []
        for d in live_differences(self.expected, record):
            key = (d.field, str(d.run))
            if key in self._seen:
                continue
            self._seen.add(key)
            line = f"ccs: drift: {d.cause}; {self.what} saw {', '.join(d.base) or 'none'} ({d.field})"
            print(visible(line if len(line) <= 400 else line[:399] + "…"), file=sys.stderr, flush=True)
            if len(self.marks) < MAX_MARKS:
                mark = {"field": d.field, "value": str(d.run)[:500], "request": record.get("id"),
                        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
                self.marks.append(mark)
                new.append(mark)
        return new

    def _mark_live(self, ctx: HookContext) -> None:
        """The manifest as it stands, with the marks so far (the closing write has the final ones)."""
        manifest = dict(ctx.manifest)
        if "launch_id" not in manifest:
            return
        manifest["live_drift"] = list(self.marks)
        try:
            reserve(write_manifest(ctx.paths, manifest))
        except OSError:
            return  # the closing write says so if the disk stays full
