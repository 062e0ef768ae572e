"""The coordinator's delayed operations, as event-loop timers instead of Kafka's purgatories.

Kafka parks JoinGroup requests in a DelayedJoin (completed when every member has rejoined or
the rebalance timeout passes), delays the first rebalance of an empty group with an
InitialDelayedJoin (extended while new members keep arriving, up to the rebalance timeout), and
expires members with a DelayedHeartbeat per member. Here each is a `loop.call_later` handle the
coordinator keeps per group / per member and cancels when the event it waits for happens. All
of it runs on the broker's event loop, so no locks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from typing import Any


class Timers:
    """Named one-shot timers: scheduling a name again replaces its previous timer."""

    def __init__(self) -> None:
        self._handles: dict[Hashable, asyncio.TimerHandle] = {}

    def schedule(self, key: Hashable, delay_ms: float, fn: Callable[..., Any], *args: Any) -> None:
        self.cancel(key)
        loop = asyncio.get_running_loop()

        def fire() -> None:
            self._handles.pop(key, None)
            fn(*args)

        self._handles[key] = loop.call_later(max(delay_ms, 0) / 1000, fire)

    def cancel(self, key: Hashable) -> bool:
        handle = self._handles.pop(key, None)
        if handle is None:
            return False
        handle.cancel()
        return True

    def is_scheduled(self, key: Hashable) -> bool:
        return key in self._handles

    def cancel_all(self) -> None:
        for handle in self._handles.values():
            handle.cancel()
        self._handles.clear()

    def __len__(self) -> int:
        return len(self._handles)
