"""Requests written into ZooKeeper for the controller: topic deletion, reassignment, preferred
leader election, and the notifications brokers leave for it (ISR changes, log dir failures)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kafkapy.zk._json import decode_json, encode_json
from kafkapy.zk.errors import ZkDataError
from kafkapy.zk.topic_znodes import TopicPartition


def _partitions_json(partitions: Iterable[TopicPartition]) -> list[dict[str, object]]:
    # Sorted so the same set always encodes to the same bytes.
    return [{"topic": t, "partition": p} for t, p in sorted(partitions)]


def _decode_partitions(data: bytes) -> set[TopicPartition]:
    js = decode_json(data)
    if js is None:
        return set()
    try:
        return {TopicPartition(str(e["topic"]), int(e["partition"])) for e in js["partitions"]}
    except (KeyError, TypeError, ValueError) as e:
        raise ZkDataError(f"Failed to parse partition list {data!r}") from e


class AdminZNode:
    @staticmethod
    def path() -> str:
        return "/admin"


class DeleteTopicsZNode:
    @staticmethod
    def path() -> str:
        return f"{AdminZNode.path()}/delete_topics"


class DeleteTopicsTopicZNode:
    """/admin/delete_topics/<topic>: an empty marker; its existence is the request."""

    @staticmethod
    def path(topic: str) -> str:
        return f"{DeleteTopicsZNode.path()}/{topic}"


class ReassignPartitionsZNode:
    """/admin/reassign_partitions, the legacy (pre KIP-455) reassignment request."""

    @staticmethod
    def path() -> str:
        return f"{AdminZNode.path()}/reassign_partitions"

    @staticmethod
    def encode(reassignment: Mapping[TopicPartition, Sequence[int]]) -> bytes:
        parts = [
            {"topic": tp[0], "partition": tp[1], "replicas": list(reassignment[tp])}
            for tp in sorted(reassignment)
        ]
        return encode_json({"version": 1, "partitions": parts})

    @staticmethod
    def decode(data: bytes) -> dict[TopicPartition, list[int]]:
        js = decode_json(data)
        if js is None:
            return {}
        try:
            return {
                TopicPartition(str(e["topic"]), int(e["partition"])): [int(r) for r in e["replicas"]]
                for e in js["partitions"]
            }
        except (KeyError, TypeError, ValueError) as e:
            raise ZkDataError(f"Failed to parse partition reassignment {data!r}") from e


class PreferredReplicaElectionZNode:
    @staticmethod
    def path() -> str:
        return f"{AdminZNode.path()}/preferred_replica_election"

    @staticmethod
    def encode(partitions: Iterable[TopicPartition]) -> bytes:
        return encode_json({"version": 1, "partitions": _partitions_json(partitions)})

    @staticmethod
    def decode(data: bytes) -> set[TopicPartition]:
        return _decode_partitions(data)


class IsrChangeNotificationZNode:
    @staticmethod
    def path() -> str:
        return "/isr_change_notification"


class IsrChangeNotificationSequenceZNode:
    """Persistent-sequential /isr_change_notification/isr_change_NNNNNNNNNN."""

    SEQUENCE_NUMBER_PREFIX = "isr_change_"

    @classmethod
    def path(cls, sequence_number: str = "") -> str:
        return f"{IsrChangeNotificationZNode.path()}/{cls.SEQUENCE_NUMBER_PREFIX}{sequence_number}"

    @staticmethod
    def encode(partitions: Iterable[TopicPartition]) -> bytes:
        return encode_json({"version": 1, "partitions": _partitions_json(partitions)})

    @staticmethod
    def decode(data: bytes) -> set[TopicPartition]:
        return _decode_partitions(data)

    @classmethod
    def sequence_number(cls, path: str) -> str:
        prefix = cls.SEQUENCE_NUMBER_PREFIX
        return path[path.rindex(prefix) + len(prefix) :]


class LogDirEventNotificationZNode:
    @staticmethod
    def path() -> str:
        return "/log_dir_event_notification"


class LogDirEventNotificationSequenceZNode:
    SEQUENCE_NUMBER_PREFIX = "log_dir_event_"
    LOG_DIR_FAILURE_EVENT = 1

    @classmethod
    def path(cls, sequence_number: str = "") -> str:
        return f"{LogDirEventNotificationZNode.path()}/{cls.SEQUENCE_NUMBER_PREFIX}{sequence_number}"

    @classmethod
    def encode(cls, broker_id: int) -> bytes:
        return encode_json({"version": 1, "broker": broker_id, "event": cls.LOG_DIR_FAILURE_EVENT})

    @staticmethod
    def decode(data: bytes) -> int | None:
        js = decode_json(data)
        return None if js is None else int(js["broker"])

    @classmethod
    def sequence_number(cls, path: str) -> str:
        prefix = cls.SEQUENCE_NUMBER_PREFIX
        return path[path.rindex(prefix) + len(prefix) :]


class ProducerIdBlockZNode:
    """/latest_producer_id_block: the last block of producer ids a broker claimed."""

    @staticmethod
    def path() -> str:
        return "/latest_producer_id_block"

    @staticmethod
    def encode(broker_id: int, block_start: int, block_end: int) -> bytes:
        return encode_json(
            {"version": 1, "broker": broker_id, "block_start": str(block_start), "block_end": str(block_end)}
        )

    @staticmethod
    def decode_block_end(data: bytes) -> int | None:
        """The last id of the block recorded in `data`; None for an empty (never claimed) node."""
        js = decode_json(data) if data else None
        return None if js is None else int(js["block_end"])
