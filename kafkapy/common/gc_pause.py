"""Bulk phases that build long-lived objects without CPython's cyclic collector running.

CPython runs a full collection whenever the objects that survived the younger generations
grow by a quarter of the long-lived ones, and each full collection walks every tracked object.
A phase that builds a large, lasting structure from nothing (a broker loading 10,000 logs: some
85 objects each) therefore walks its own growing result again and again; measured here (by
gc.callbacks), 8 full collections took 0.74 s of a 5.5 s load of 10k logs. Reference counting
still frees what such a phase drops; only cyclic garbage waits until the collector is back on,
moments later.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """The collector off for the block, then one full collection, then back on unless it was
    already off.

    The one collection walks what the block built once and leaves it in the oldest generation,
    counted as long-lived; without it the younger generations would each walk it on their next
    collections, moments later and on whichever thread allocates (the event loop's, say).
    Process-wide, as the collector is: overlapping blocks on other threads are safe (whoever
    turned it off turns it on; one that found it off leaves it), at worst the collector comes
    back a little early, as before this existed.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
        gc.collect()
    finally:
        if was_enabled:
            gc.enable()
