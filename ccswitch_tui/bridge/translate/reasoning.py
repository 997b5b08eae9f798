"""Reasoning text a provider returned (``reasoning_content``), kept per tool call for one launch.

DeepSeek and Kimi in thinking mode answer 400 when an assistant turn with tool calls comes back
without the reasoning that produced it. Codex never sees ``reasoning_content`` (it gets the text
as a reasoning summary), so the bridge remembers it under each call id of the turn and puts it
back on the assistant message that carries those calls.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable


class ReasoningMemory:
    """call id → reasoning text, bounded (oldest forgotten first), safe to share between requests."""

    def __init__(self, limit: int = 4096):
        self.limit = limit
        self._by_call: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, call_ids: Iterable[str], text: str) -> None:
        if not text:
            return
        with self._lock:
            for call_id in call_ids:
                self._by_call[call_id] = text
                self._by_call.move_to_end(call_id)
            while len(self._by_call) > self.limit:
                self._by_call.popitem(last=False)

    def recall(self, call_ids: Iterable[str]) -> str | None:
        with self._lock:
            for call_id in call_ids:
                text = self._by_call.get(call_id)
                if text:
                    return text
        return None

    def __len__(self) -> int:
        return len(self._by_call)
