"""ConsumerFetcherThread: fetches its partitions from one broker and feeds the streams' queues.

Each round sends one Fetch for all its partitions (fetch.message.max.bytes each, waiting up to
fetch.wait.max.ms for fetch.min.bytes), decodes the record batches (decompressing them), and
enqueues each partition's records as one chunk. A partition whose fetch offset is unknown (-1:
nothing committed) or out of range is reset with ListOffsets according to auto.offset.reset;
any other partition error, or losing the broker, sends the partition back to the leader finder.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from kafkapy.client.connection import BrokerConnection
from kafkapy.consumer_legacy.config import SMALLEST, ConsumerConfig
from kafkapy.consumer_legacy.stream import PartitionTopicInfo
from kafkapy.consumer_legacy.wire import PartitionData, fetch, list_offsets, open_connection
from kafkapy.protocol.constants import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from kafkapy.protocol.errors import OffsetOutOfRangeException
from kafkapy.protocol.record_batch import iter_batches
from kafkapy.protocol.record_codec import Record, decode_batch_records

if TYPE_CHECKING:
    from kafkapy.consumer_legacy.fetcher import ConsumerFetcherManager

log = logging.getLogger(__name__)

TopicAndPartition = tuple[str, int]


class ConsumerFetcherThread(threading.Thread):
    def __init__(
        self, name: str, config: ConsumerConfig, host: str, port: int, manager: ConsumerFetcherManager
    ) -> None:
        super().__init__(name=name, daemon=True)
        self.config = config
        self.host = host
        self.port = port
        self.manager = manager
        self._lock = threading.Lock()
        self._partitions: dict[TopicAndPartition, PartitionTopicInfo] = {}
        self._stopped = threading.Event()
        self._conn: BrokerConnection | None = None

    def add_partitions(self, infos: list[PartitionTopicInfo]) -> None:
        with self._lock:
            for info in infos:
                self._partitions[(info.topic, info.partition)] = info

    def partition_count(self) -> int:
        with self._lock:
            return len(self._partitions)

    def initiate_shutdown(self) -> None:
        self._stopped.set()

    def _give_back(self, tps: list[TopicAndPartition]) -> None:
        with self._lock:
            for tp in tps:
                self._partitions.pop(tp, None)
        self.manager.add_partitions_with_error(tps)

    def run(self) -> None:
        backoff_s = self.config.refresh_leader_backoff_ms / 1000
        try:
            while not self._stopped.is_set():
                with self._lock:
                    parts = dict(self._partitions)
                if not parts:
                    self._stopped.wait(0.05)
                    continue
                try:
                    self._fetch_once(parts)
                except Exception as e:  # the broker went away or spoke nonsense
                    if self._stopped.is_set():
                        break
                    log.warning("[%s], Error in fetch from %s:%d: %s", self.name, self.host, self.port, e)
                    self._close()
                    self._give_back(list(parts))
                    self._stopped.wait(backoff_s)
        finally:
            self._close()

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _connection(self) -> BrokerConnection:
        if self._conn is None:
            self._conn = open_connection(
                self.host, self.port, self.config.effective_client_id, self.config.socket_timeout_ms / 1000
            )
        return self._conn

    def _fetch_once(self, parts: dict[TopicAndPartition, PartitionTopicInfo]) -> None:
        conn = self._connection()
        unknown = [tp for tp, info in parts.items() if info.fetched_offset < 0]
        if unknown:
            self._reset_offsets(conn, parts, unknown)
        request = {
            tp: (info.fetched_offset, info.fetch_size)
            for tp, info in parts.items()
            if info.fetched_offset >= 0
        }
        if not request:
            return
        response = fetch(conn, request, self.config.fetch_wait_max_ms, self.config.fetch_min_bytes)
        out_of_range: list[TopicAndPartition] = []
        failed: list[TopicAndPartition] = []
        for tp, data in response.items():
            info = parts.get(tp)
            with self._lock:
                current = self._partitions.get(tp)
            if info is None or current is not info or info.revoked:
                continue  # removed while the fetch was in flight
            if data.error_code == OffsetOutOfRangeException.code:
                out_of_range.append(tp)
            elif data.error_code:
                log.info(
                    "[%s], partition %s: error %d, looking for its leader again",
                    self.name,
                    tp,
                    data.error_code,
                )
                failed.append(tp)
            elif not self._process(info, request[tp][0], data):
                return  # stopping
        if out_of_range:
            self._reset_offsets(conn, parts, out_of_range)
        if failed:
            self._give_back(failed)

    def _process(self, info: PartitionTopicInfo, fetch_offset: int, data: PartitionData) -> bool:
        if data.records is None or len(data.records) == 0:
            return True
        records: list[Record] = []
        next_offset = fetch_offset
        view = data.records
        for position, header in iter_batches(view):
            next_offset = max(next_offset, header.next_offset)
            if header.is_control or header.next_offset <= fetch_offset:
                continue  # transaction markers are not messages; old batches were consumed
            records.extend(r for r in decode_batch_records(view, position) if r.offset >= fetch_offset)
        if next_offset == fetch_offset:
            # Bytes came back but not one whole batch: the next batch is larger than
            # fetch.message.max.bytes (Kafka's MessageSizeTooLargeException on the iterator).
            log.error(
                "Found a message larger than the maximum fetch size of this consumer on topic %s "
                "partition %d at fetch offset %d. Increase the fetch size, or decrease the maximum "
                "message size the broker will allow.",
                info.topic,
                info.partition,
                fetch_offset,
            )
            self._stopped.wait(self.config.refresh_leader_backoff_ms / 1000)
            return True
        if not info.enqueue(records, fetch_offset, self._stopped):
            return False
        if info.fetched_offset < next_offset:
            info.fetched_offset = next_offset  # skip past control batches at the end
        return True

    def _reset_offsets(
        self,
        conn: BrokerConnection,
        parts: dict[TopicAndPartition, PartitionTopicInfo],
        tps: list[TopicAndPartition],
    ) -> None:
        timestamp = EARLIEST_TIMESTAMP if self.config.auto_offset_reset == SMALLEST else LATEST_TIMESTAMP
        answers = list_offsets(conn, tps, timestamp)
        failed = []
        for tp in tps:
            error, offset = answers.get(tp, (-1, -1))
            if error or offset < 0:
                failed.append(tp)
                continue
            info = parts[tp]
            log.info(
                "[%s], Resetting offset for partition %s from %d to the %s offset %d",
                self.name,
                tp,
                info.fetched_offset,
                self.config.auto_offset_reset,
                offset,
            )
            info.reset_offsets(offset)
        if failed:
            self._give_back(failed)
