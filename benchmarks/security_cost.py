"""What TLS and SASL cost: librdkafka produce and consume of 1 KB records through one broker's
PLAINTEXT, SSL and SASL_SSL (SCRAM-SHA-256) listeners, in one run, the three interleaved in
every round.

    python benchmarks/security_cost.py [--records 100000] [--rounds 2]

The broker is a real kafkapy process (kafkapy.testing) with throw-away certificates made by the
openssl CLI (tests/security_pki.py). Prints MB/s and broker CPU seconds per GB for
each listener and the ratio to PLAINTEXT.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from confluent_kafka import Consumer, Producer  # noqa: E402
from security_pki import make_pki  # noqa: E402

from benchmarks.brokers import cpu_seconds  # noqa: E402
from kafkapy.server.security.scram import add_scram_credential  # noqa: E402
from kafkapy.testing import KafkapyCluster, free_port  # noqa: E402
from kafkapy.zk.admin_zk_client import AdminZkClient  # noqa: E402
from kafkapy.zk.kafka_zk_client import KafkaZkClient  # noqa: E402

VALUE = b"x" * 1024


def _produce(conf: dict[str, Any], topic: str, n: int) -> float:
    p = Producer(
        {
            **conf,
            "acks": "1",
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    start = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                p.produce(topic, VALUE)
                break
            except BufferError:
                p.poll(0.01)
    assert p.flush(120) == 0
    return time.perf_counter() - start


def _consume(conf: dict[str, Any], topic: str, n: int) -> float:
    c = Consumer(
        {
            **conf,
            "group.id": f"g-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    c.subscribe([topic])
    got, start = 0, time.perf_counter()
    while got < n:
        for msg in c.consume(10000, 1.0):
            if msg.error() is None:
                got += 1
    elapsed = time.perf_counter() - start
    c.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="kafkapy-seccost-"))
    pki = make_pki(base / "pki")
    ports: dict[str, int] = {}
    holder: dict[str, KafkapyCluster] = {}

    def overrides(broker_id: int, port: int) -> dict[str, str]:
        zk = KafkaZkClient(holder["c"].zookeeper_connect, 6000, 10000)
        zk.start()
        add_scram_credential(AdminZkClient(zk), "bench", "SCRAM-SHA-256", "bench-secret")
        zk.close()
        ports.update(PLAINTEXT=port, SSL=free_port(), SASL_SSL=free_port())
        return {
            "listeners": f"PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:{ports['SSL']},SASL_SSL://127.0.0.1:{ports['SASL_SSL']}",
            "sasl.enabled.mechanisms": "SCRAM-SHA-256",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(pki.server_keystore),
        }

    cluster = KafkapyCluster(base / "cluster", 1, {}, overrides)
    holder["c"] = cluster
    confs = {
        "PLAINTEXT": {},
        "SSL": {"security.protocol": "SSL", "ssl.ca.location": str(pki.ca)},
        "SASL_SSL": {"security.protocol": "SASL_SSL", "ssl.ca.location": str(pki.ca), "sasl.mechanism": "SCRAM-SHA-256",
                     "sasl.username": "bench", "sasl.password": "bench-secret"},
    }  # fmt: skip
    results: dict[str, dict[str, list[float]]] = {
        k: {"produce": [], "consume": [], "pcpu": [], "ccpu": []} for k in confs
    }
    mb = args.records * len(VALUE) / 1e6
    try:
        cluster.start()
        pid = cluster.brokers[0].process.pid  # type: ignore[union-attr]
        for _ in range(args.rounds):
            for name, extra in confs.items():
                conf = {"bootstrap.servers": f"127.0.0.1:{ports[name]}", **extra}
                topic = f"cost-{name.lower()}-{uuid.uuid4().hex[:6]}"
                c0 = cpu_seconds(pid)
                elapsed = _produce(conf, topic, args.records)
                c1 = cpu_seconds(pid)
                results[name]["produce"].append(mb / elapsed)
                results[name]["pcpu"].append((c1 - c0) / (mb / 1000))
                elapsed = _consume(conf, topic, args.records)
                results[name]["consume"].append(mb / elapsed)
                results[name]["ccpu"].append((cpu_seconds(pid) - c1) / (mb / 1000))
                print(name, {k: round(v[-1], 1) for k, v in results[name].items()}, flush=True)
    finally:
        cluster.stop()
    base_p = statistics.median(results["PLAINTEXT"]["produce"])
    base_c = statistics.median(results["PLAINTEXT"]["consume"])
    print(
        f"\n{'listener':10} {'produce MB/s':>13} {'cpu s/GB':>9} {'consume MB/s':>13} {'cpu s/GB':>9} {'produce/PT':>11} {'consume/PT':>11}"
    )
    for name, r in results.items():
        p, c = statistics.median(r["produce"]), statistics.median(r["consume"])
        print(f"{name:10} {p:13.1f} {statistics.median(r['pcpu']):9.1f} {c:13.1f} {statistics.median(r['ccpu']):9.1f}"
              f" {p / base_p:11.2f} {c / base_c:11.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
