"""DelayedOperationPurgatory.check_and_complete_all: each watcher is tried once for many keys."""

from __future__ import annotations

import asyncio

import pytest

from kafkapy.server.purgatory import DelayedOperation, DelayedOperationPurgatory


@pytest.mark.timeout(10)
def test_each_watching_operation_is_tried_once_for_many_keys() -> None:
    async def run() -> None:
        purgatory = DelayedOperationPurgatory("Fetch")
        calls = {"wide": 0, "narrow": 0}
        ready = {"narrow": False}

        def wide() -> bool:
            calls["wide"] += 1
            return False

        def narrow() -> bool:
            calls["narrow"] += 1
            return ready["narrow"]

        wide_op, narrow_op = DelayedOperation(wide), DelayedOperation(narrow)
        purgatory.try_complete_else_watch(wide_op, range(1000), 60_000)
        purgatory.try_complete_else_watch(narrow_op, [5], 60_000)
        calls.update(wide=0, narrow=0)
        ready["narrow"] = True
        assert purgatory.check_and_complete_all(range(1000)) == 1
        assert calls == {"wide": 1, "narrow": 1}
        assert wide_op.rechecked and narrow_op.completed and not wide_op.completed
        await asyncio.sleep(0)  # the done callback unwatches the completed operation
        assert purgatory.watched() == 1000
        assert purgatory.check_and_complete_all([2000]) == 0
        purgatory.shutdown()

    asyncio.run(run())
