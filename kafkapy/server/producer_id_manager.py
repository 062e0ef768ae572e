"""ProducerIdManager: producer ids for idempotent producers, in blocks claimed from ZooKeeper.

As Kafka's ZooKeeper-mode manager does, each broker claims a block of 1000 ids at a time by a
conditional update of /latest_producer_id_block, so ids are unique across brokers and restarts.
"""

from __future__ import annotations

import threading
from typing import Any

from kazoo.exceptions import NodeExistsError

from kafkapy.zk.admin_znodes import ProducerIdBlockZNode

BLOCK_SIZE = 1000


class ProducerIdManager:
    def __init__(self, broker_id: int, zk: Any) -> None:
        self.broker_id = broker_id
        self.zk = zk
        self._lock = threading.Lock()
        self._next = 0
        self._end = -1  # inclusive end of the current block

    def generate_producer_id(self) -> int:
        """Blocking (may claim a new block from ZooKeeper): call off the event loop."""
        with self._lock:
            if self._next > self._end:
                self._claim_block()
            pid = self._next
            self._next += 1
            return pid

    def _claim_block(self) -> None:
        path = ProducerIdBlockZNode.path()
        for _ in range(100):
            current = self.zk.get_data(path)
            last = ProducerIdBlockZNode.decode_block_end(current[0]) if current is not None else None
            start = 0 if last is None else last + 1
            data = ProducerIdBlockZNode.encode(self.broker_id, start, start + BLOCK_SIZE - 1)
            if current is None:
                try:
                    self.zk.create_recursive(path, data)
                except NodeExistsError:
                    continue  # another broker created it first: read its block and go on from there
                self._use(start)
                return
            ok, _ = self.zk.conditional_update_path(path, data, current[1].version)
            if ok:
                self._use(start)
                return
        raise RuntimeError("Could not claim a producer id block from ZooKeeper after 100 attempts")

    def _use(self, start: int) -> None:
        self._next, self._end = start, start + BLOCK_SIZE - 1
