"""Decode/encode speed of kafkapy.protocol.messages against kafka-python's generated classes.

Run: .venv/bin/python benchmarks/protocol_codec.py
Prints us per call (median of 5 runs) for a few realistic frames; messages.py's docstring
records the numbers that decided the codec.
"""

from __future__ import annotations

import importlib
import statistics
import time
import uuid
import warnings
from collections.abc import Callable
from typing import Any

from kafkapy.protocol import messages
from kafkapy.protocol.schema import get_spec

warnings.simplefilter("ignore", DeprecationWarning)

FRAMES: list[tuple[str, int, str, int, dict[str, Any]]] = [
    ("Metadata v12 request, 3 topics", 3, "request", 12,
     {"topics": [{"name": f"topic-{i}", "topic_id": uuid.UUID(int=0)} for i in range(3)],
      "allow_auto_topic_creation": True}),
    ("ListOffsets v8 request, 1 topic/4 parts", 2, "request", 8,
     {"replica_id": -1, "isolation_level": 0, "topics": [{"name": "events", "partitions": [
         {"partition_index": p, "current_leader_epoch": 3, "timestamp": -1} for p in range(4)]}]}),
    ("CreateTopics v7 request, 2 topics+conf", 19, "request", 7,
     {"topics": [{"name": f"new-{i}", "num_partitions": 6, "replication_factor": 3, "assignments": [],
                  "configs": [{"name": "retention.ms", "value": "86400000"},
                              {"name": "cleanup.policy", "value": "delete"}]} for i in range(2)],
      "timeout_ms": 30000, "validate_only": False}),
    ("JoinGroup v9 request, 2 protocols", 11, "request", 9,
     {"group_id": "my-group", "session_timeout_ms": 45000, "rebalance_timeout_ms": 300000,
      "member_id": "consumer-1-6f1c1c7e-55d7-4b0e-9d1c-3a8f2f0d9b77", "group_instance_id": None,
      "protocol_type": "consumer", "reason": None,
      "protocols": [{"name": n, "metadata": bytes(64)} for n in ("range", "cooperative-sticky")]}),
    ("Metadata v12 response, 50 partitions", 3, "response", 12,
     {"brokers": [{"node_id": i, "host": f"broker-{i}.example", "port": 9092, "rack": None} for i in range(3)],
      "cluster_id": "abc", "controller_id": 0,
      "topics": [{"error_code": 0, "name": f"topic-{t}", "topic_id": uuid.UUID(int=t + 1), "is_internal": False,
                  "partitions": [{"error_code": 0, "partition_index": p, "leader_id": p % 3, "leader_epoch": 5,
                                  "replica_nodes": [0, 1, 2], "isr_nodes": [0, 1, 2], "offline_replicas": []}
                                 for p in range(10)]} for t in range(5)]}),
]  # fmt: skip


def _kp_class(name: str) -> Any:
    from kafka.protocol.api_message import ApiMessage

    for mod in ("metadata", "consumer", "producer", "admin"):
        importlib.import_module(f"kafka.protocol.{mod}")
    stack = list(ApiMessage.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.__name__ == name:
            return cls
    raise LookupError(name)


def _time(fn: Callable[[], object], n: int = 20_000) -> float:
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        runs.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(runs)


def main() -> None:
    print(f"{'frame':40} {'decode kp':>10} {'ours':>6} {'encode kp':>10} {'ours':>6}")
    for label, key, kind, v, data in FRAMES:
        encode = messages.encode_request if kind == "request" else messages.encode_response
        decode = messages.decode_request if kind == "request" else messages.decode_response
        wire = encode(key, v, data)
        spec = get_spec(key, kind)
        assert spec is not None
        cls = _kp_class(spec.name)
        theirs = cls.decode(wire, version=v)
        object.__setattr__(theirs, "_header", None)
        assert theirs.encode(version=v) == wire
        ours = decode(key, v, wire)
        n = 2_000 if "50" in label else 20_000
        kd = _time(lambda: cls.decode(wire, version=v), n)  # noqa: B023
        od = _time(lambda: decode(key, v, wire), n)  # noqa: B023
        ke = _time(lambda: theirs.encode(version=v), n)  # noqa: B023
        oe = _time(lambda: encode(key, v, ours), n)  # noqa: B023
        print(f"{label:40} {kd:10.1f} {od:6.1f} {ke:10.1f} {oe:6.1f}")


if __name__ == "__main__":
    main()
