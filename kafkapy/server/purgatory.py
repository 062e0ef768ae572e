"""Delayed operations: produce requests waiting for the ISR (acks=all), fetches waiting for data.

Kafka's DelayedOperationPurgatory keyed by watch keys (topic partitions), on the event loop:
an operation is checked when it is created, again whenever something happens to one of its
keys (`check_and_complete`), and completed by force when its timeout fires. Completion resolves
the operation's future; the waiting request handler then builds its response.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Iterable


class DelayedOperation:
    """An operation that completes when `can_complete()` holds or after `delay_ms`."""

    __slots__ = ("can_complete", "future", "_timer", "completed", "rechecked")

    def __init__(self, can_complete: Callable[[], bool]) -> None:
        self.can_complete = can_complete
        self.future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._timer: asyncio.TimerHandle | None = None
        self.completed = False
        # Whether something happened to one of its keys while it was watched: an operation that
        # timed out without it saw no change to what it watches.
        self.rechecked = False

    def force_complete(self, satisfied: bool) -> bool:
        if self.completed:
            return False
        self.completed = True
        if self._timer is not None:
            self._timer.cancel()
        if not self.future.done():
            self.future.set_result(satisfied)
        return True

    def try_complete(self) -> bool:
        if not self.completed and self.can_complete():
            return self.force_complete(True)
        return self.completed


class DelayedOperationPurgatory:
    def __init__(self, name: str) -> None:
        self.name = name
        self._watchers: dict[Hashable, list[DelayedOperation]] = {}

    def try_complete_else_watch(
        self, op: DelayedOperation, keys: Iterable[Hashable], delay_ms: int
    ) -> asyncio.Future[bool]:
        """Complete now if possible; otherwise watch `keys` until completion or the timeout."""
        if op.try_complete():
            return op.future
        keys = list(keys)
        for key in keys:
            self._watchers.setdefault(key, []).append(op)
        loop = asyncio.get_running_loop()
        op._timer = loop.call_later(max(delay_ms, 0) / 1000, op.force_complete, False)
        op.future.add_done_callback(lambda _f: self._unwatch(op, keys))
        return op.future

    def check_and_complete(self, key: Hashable) -> int:
        ops = self._watchers.get(key)
        if not ops:
            return 0
        done = 0
        for op in list(ops):
            op.rechecked = True
            if op.try_complete():
                done += 1
        return done

    def check_and_complete_all(self, keys: Iterable[Hashable]) -> int:
        """`check_and_complete` for many keys at once, trying each operation once: a follower's
        fetch watches thousands of partitions, and a LeaderAndIsr touching thousands of them
        would otherwise re-check it once per key (each check a walk over its partitions)."""
        ops: dict[DelayedOperation, None] = {}
        for key in keys:
            for op in self._watchers.get(key, ()):
                ops[op] = None
        done = 0
        for op in ops:
            op.rechecked = True
            if op.try_complete():
                done += 1
        return done

    def _unwatch(self, op: DelayedOperation, keys: list[Hashable]) -> None:
        for key in keys:
            ops = self._watchers.get(key)
            if ops is None:
                continue
            try:
                ops.remove(op)
            except ValueError:
                pass
            if not ops:
                del self._watchers[key]

    def watched(self) -> int:
        return sum(len(v) for v in self._watchers.values())

    def shutdown(self) -> None:
        for ops in list(self._watchers.values()):
            for op in list(ops):
                op.force_complete(False)
        self._watchers.clear()
