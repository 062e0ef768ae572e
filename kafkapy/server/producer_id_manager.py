"""ProducerIdManager: producer ids for idempotent producers, in blocks claimed from ZooKeeper.

As Kafka's ZooKeeper-mode manager does, each broker claims a block of 1000 ids at a time by a
conditional update of /latest_producer_id_block, so ids are unique across brokers and restarts.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from kazoo.exceptions import NodeExistsError

PRODUCER_ID_BLOCK_PATH = "/latest_producer_id_block"
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
        for _ in range(100):
            current = self.zk.get_data(PRODUCER_ID_BLOCK_PATH)
            if current is None or not current[0]:
                start = 0
                try:
                    data = self._encode(start)
                    if current is None:
                        self.zk.create_recursive(PRODUCER_ID_BLOCK_PATH, data)
                        self._use(start)
                        return
                    ok, _ = self.zk.conditional_update_path(PRODUCER_ID_BLOCK_PATH, data, current[1].version)
                except NodeExistsError:
                    continue
            else:
                block = json.loads(current[0])
                start = int(block["block_end"]) + 1
                ok, _ = self.zk.conditional_update_path(
                    PRODUCER_ID_BLOCK_PATH, self._encode(start), current[1].version
                )
            if ok:
                self._use(start)
                return
        raise RuntimeError("Could not claim a producer id block from ZooKeeper after 100 attempts")

    def _encode(self, start: int) -> bytes:
        return json.dumps(
            {
                "version": 1,
                "broker": self.broker_id,
                "block_start": str(start),
                "block_end": str(start + BLOCK_SIZE - 1),
            },
            separators=(",", ":"),
        ).encode()

    def _use(self, start: int) -> None:
        self._next, self._end = start, start + BLOCK_SIZE - 1
