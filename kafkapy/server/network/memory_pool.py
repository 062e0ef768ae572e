"""MemoryPool: `queued.max.request.bytes` shared by every connection's receive buffer (KIP-72).

Kafka's SimpleMemoryPool hands each incoming request a buffer of its size and mutes a channel
whose next request does not fit until memory is released. kafkapy's connections read into
their own reusable buffers instead (see processor.py), so the pool accounts for what a buffer
holds beyond the small base every connection may keep without asking (`BASE_CAPACITY`):

- a frame that would need more than that reserves its whole size before its buffer grows
  beyond the base (reserved in full so that a granted frame can always complete: reserving as
  bytes arrive would let many half-received frames wait on each other forever);
- like Kafka's pool (`strict = false`) a reservation is granted while any memory is left, so
  the pool overshoots its size by at most one frame (`socket.request.max.bytes`);
- a connection that is refused waits, muted, in FIFO order and is woken when memory returns;
- a connection keeps its grown buffer after the frame so that a client sending ~1 MB produce
  requests does not reallocate one per request; while its buffer is empty it is an idle holder
  that the pool takes memory back from (oldest first) before refusing anyone.

A size of -1 (Kafka's default) or 0 means unbounded: reservations always succeed and are only
counted, so `used` still shows what receive buffers hold.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import Protocol

log = logging.getLogger("kafkapy.network.MemoryPool")

# What a connection's receive buffer may hold without a reservation: big enough for every
# ordinary request (metadata, heartbeats, small produce batches, pipelined small requests),
# small enough that max.connections of them is affordable.
BASE_CAPACITY = 64 * 1024


class PoolHolder(Protocol):
    """A connection as the pool sees it."""

    def memory_granted(self, nbytes: int) -> None:
        """A waiting reservation of `nbytes` was granted (already counted as used)."""

    def release_idle_memory(self) -> int:
        """Give back the reservation if the buffer is empty and no request is in progress;
        the bytes given back (0 if the holder is busy after all)."""


class MemoryPool:
    def __init__(self, size: int, schedule: Callable[..., object]) -> None:
        self.size = size
        self.bounded = size > 0
        self.used = 0
        # loop.call_soon: a granted waiter resumes on its own turn of the loop, not inside the
        # connection (or close) that released the memory.
        self._schedule = schedule
        self._waiters: deque[tuple[PoolHolder, int]] = deque()
        # Insertion-ordered: the holder idle the longest gives its memory back first.
        self._idle: dict[PoolHolder, None] = {}

    @property
    def available(self) -> int:
        return self.size - self.used if self.bounded else 1 << 62

    def is_out_of_memory(self) -> bool:
        return self.bounded and self.used >= self.size

    def try_reserve(self, holder: PoolHolder, nbytes: int) -> bool:
        """Reserve `nbytes` now, or queue the holder (muted) and call `memory_granted` later."""
        if not self.bounded:
            self.used += nbytes
            return True
        if not self._waiters and self._grantable(nbytes):
            self.used += nbytes
            return True
        self._waiters.append((holder, nbytes))
        return False

    def release(self, nbytes: int) -> None:
        self.used -= nbytes
        if self._waiters:
            self._serve_waiters()

    def offer_idle(self, holder: PoolHolder) -> None:
        """`holder` has an empty buffer it could give back: note it (re-offering keeps its place)."""
        if self.bounded and holder not in self._idle:
            self._idle[holder] = None

    def forget(self, holder: PoolHolder) -> None:
        """The holder is closing: drop it from the idle holders and from the waiters."""
        self._idle.pop(holder, None)
        if self._waiters and any(h is holder for h, _ in self._waiters):
            self._waiters = deque((h, n) for h, n in self._waiters if h is not holder)

    def _grantable(self, nbytes: int) -> bool:
        """Kafka's non-strict rule (anything while memory is left), after taking back idle
        holders' memory until this reservation fits."""
        while self.used + nbytes > self.size and self._idle:
            holder = next(iter(self._idle))
            del self._idle[holder]
            self.used -= holder.release_idle_memory()
        return self.used < self.size

    def _serve_waiters(self) -> None:
        while self._waiters:
            holder, nbytes = self._waiters[0]
            if not self._grantable(nbytes):
                return
            self._waiters.popleft()
            self.used += nbytes
            self._schedule(holder.memory_granted, nbytes)

    def waiting(self) -> int:
        return len(self._waiters)
