"""What an authorization decision costs the broker: AclAuthorizer.authorize on a loaded cache,
and (--end-to-end N) broker CPU per small produce request with the authorizer off and on.

    python benchmarks/acl_cost.py [--topics 10000] [--prefixes 100] [--calls 200000]
    python benchmarks/acl_cost.py --end-to-end 50000 [--rounds 2] [--acls 1000]

The cache is filled the way a broker fills it (AclAuthorizer.load over ZooKeeper reads, here an
in-memory stand-in holding Kafka's JSON): one literal ACL per topic, `--prefixes` prefixed ACLs
and a wildcard. Prints microseconds per decision for an allowed topic, a refused one, a super
user and one with no authorizer (the handlers' `apis.authorizer is None` test), so the cost per
Produce/Fetch request (one decision per topic in it) can be read off.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kafkapy.server.security.acl import (  # noqa: E402
    AclEntry,
    AuthorizerConfig,
    Operation,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
)
from kafkapy.server.security.acl_authorizer import AclAuthorizer  # noqa: E402
from kafkapy.server.security.principal import KafkaPrincipal  # noqa: E402
from kafkapy.zk.acl_znodes import ResourceZNode  # noqa: E402


class _MemoryZk:
    """get_children/get_data over a dict of paths, enough for AclAuthorizer.load()."""

    def __init__(self, patterns: dict[ResourcePattern, list[AclEntry]]) -> None:
        self.data = {ResourceZNode.path(p): ResourceZNode.encode(es) for p, es in patterns.items()}

    def get_children(self, path: str) -> list[str]:
        prefix = path + "/"
        return [k[len(prefix) :] for k in self.data if k.startswith(prefix) and "/" not in k[len(prefix) :]]

    def get_data(self, path: str) -> tuple[bytes, None] | None:
        got = self.data.get(path)
        return None if got is None else (got, None)


def _per_call_us(fn: object, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()  # type: ignore[operator]
    return (time.perf_counter() - start) / calls * 1e6


def end_to_end(requests: int, rounds: int, filler_acls: int) -> None:
    """benchmarks/small_requests.py (single-record produce requests pipelined on one PLAINTEXT
    connection) against a broker without an authorizer and one with AclAuthorizer, where
    User:ANONYMOUS holds Write on the topic beside `filler_acls` other topics' ACLs."""
    import statistics
    import tempfile

    from benchmarks.brokers import RunningBroker, python_broker_pid
    from benchmarks.common import create_topics
    from benchmarks.small_requests import produce_version, run
    from kafkapy.testing import kafkapy_cluster_context
    from kafkapy.zk.kafka_zk_client import KafkaZkClient

    on = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "super.users": "User:admin"}
    results: dict[str, list[float]] = {"off": [], "on": []}
    for _ in range(rounds):
        for mode in ("off", "on"):
            with tempfile.TemporaryDirectory(prefix="kafkapy-acl-bench-") as root, \
                    kafkapy_cluster_context(1, on if mode == "on" else {}, Path(root)) as cluster:  # fmt: skip
                if mode == "on":
                    zk = KafkaZkClient(cluster.zookeeper_connect, 18000)
                    zk.start()
                    try:
                        writer = AclAuthorizer(AuthorizerConfig(), zk)
                        writer.load()
                        anyone = [AclEntry("User:ANONYMOUS", "*", op, Permission.ALLOW)
                                  for op in (Operation.WRITE, Operation.CREATE)]  # fmt: skip
                        writer.add_acls(ResourcePattern(ResourceType.TOPIC, "small"), anyone)
                        # The broker's own PLAINTEXT inter-broker requests come as ANONYMOUS too.
                        action = AclEntry("User:ANONYMOUS", "*", Operation.CLUSTER_ACTION, Permission.ALLOW)
                        writer.add_acls(ResourcePattern(ResourceType.CLUSTER, "kafka-cluster"), [action])
                        for i in range(filler_acls):
                            entry = AclEntry(f"User:app-{i}", "*", Operation.WRITE, Permission.ALLOW)
                            writer.add_acls(ResourcePattern(ResourceType.TOPIC, f"other-{i}"), [entry])
                    finally:
                        zk.close()
                    time.sleep(2)  # the broker's cache follows the notifications
                handle = cluster.brokers[0]
                assert handle.process is not None
                broker = RunningBroker("kafkapy", handle.bootstrap, python_broker_pid(handle.process.pid),
                                       handle.log_dir, cluster.zookeeper_connect)  # fmt: skip
                create_topics(broker.bootstrap, {"small": 1})
                r = run(broker, "small", produce_version([broker.bootstrap]), requests)
                cpu = float(r["broker_cpu_us_per_request"])  # type: ignore[arg-type]
                results[mode].append(cpu)
                print(
                    f"authorizer {mode:3}: {r['requests_per_s']:9.0f} req/s  {cpu:6.1f} us broker CPU/request"
                )
    off, on_ = statistics.median(results["off"]), statistics.median(results["on"])
    print(f"median broker CPU per request: off {off:.1f} us, on {on_:.1f} us ({on_ / off:.2f}x)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topics", type=int, default=10_000)
    ap.add_argument("--prefixes", type=int, default=100)
    ap.add_argument("--calls", type=int, default=200_000)
    ap.add_argument("--end-to-end", type=int, default=0, metavar="REQUESTS")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--acls", type=int, default=1000, help="other topics' ACLs in the end-to-end run")
    args = ap.parse_args()
    if args.end_to_end:
        end_to_end(args.end_to_end, args.rounds, args.acls)
        return
    write = Operation.WRITE
    patterns: dict[ResourcePattern, list[AclEntry]] = {
        ResourcePattern(ResourceType.TOPIC, f"topic-{i}"): [
            AclEntry(f"User:app-{i % 50}", "*", write, Permission.ALLOW),
            AclEntry("User:reader", "*", Operation.READ, Permission.ALLOW),
        ]
        for i in range(args.topics)
    }
    for i in range(args.prefixes):
        pattern = ResourcePattern(ResourceType.TOPIC, f"team-{i}-", PatternType.PREFIXED)
        patterns[pattern] = [AclEntry(f"User:team-{i}", "*", Operation.ALL, Permission.ALLOW)]
    patterns[ResourcePattern(ResourceType.TOPIC, "*")] = [
        AclEntry("User:ops", "*", Operation.DESCRIBE, Permission.ALLOW)
    ]
    started = time.perf_counter()
    authorizer = AclAuthorizer(AuthorizerConfig(frozenset({"User:admin"})), _MemoryZk(patterns))
    authorizer.load()
    load_s = time.perf_counter() - started
    app = KafkaPrincipal("User", "app-7")
    topic = ResourceType.TOPIC
    allowed = _per_call_us(lambda: authorizer.authorize(app, "10.0.0.1", write, topic, "topic-7"), args.calls)
    refused = _per_call_us(lambda: authorizer.authorize(app, "10.0.0.1", write, topic, "topic-8"), args.calls)
    prefixed = _per_call_us(
        lambda: authorizer.authorize(KafkaPrincipal("User", "team-3"), "h", write, topic, "team-3-orders"),
        args.calls,
    )
    admin = KafkaPrincipal("User", "admin")
    superuser = _per_call_us(lambda: authorizer.authorize(admin, "h", write, topic, "topic-7"), args.calls)
    none: object = None
    off = _per_call_us(lambda: none is None, args.calls)
    print(f"{len(patterns)} resource patterns loaded in {load_s:.2f} s")
    print(f"allowed (literal)     {allowed:6.2f} us/decision")
    print(f"refused (literal)     {refused:6.2f} us/decision")
    print(f"allowed (prefixed)    {prefixed:6.2f} us/decision")
    print(f"super user            {superuser:6.2f} us/decision")
    print(f"no authorizer         {off:6.2f} us/check")


if __name__ == "__main__":
    main()
