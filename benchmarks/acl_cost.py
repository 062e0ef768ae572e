"""What an authorization decision costs the broker: AclAuthorizer.authorize on a loaded cache.

    python benchmarks/acl_cost.py [--topics 10000] [--prefixes 100] [--calls 200000]

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
from kafkapy.server.zk.acl_znodes import ResourceZNode  # noqa: E402


class _MemoryZk:
    """get_children/get_data over a dict of paths, enough for AclAuthorizer.load()."""

    def __init__(self, patterns: dict[ResourcePattern, list[AclEntry]]) -> None:
        self.data = {ResourceZNode.path(p): ResourceZNode.encode(es) for p, es in patterns.items()}

    def get_children(self, path: str) -> list[str]:
        prefix = path + "/"
        return [k[len(prefix):] for k in self.data if k.startswith(prefix) and "/" not in k[len(prefix):]]

    def get_data(self, path: str) -> tuple[bytes, None] | None:
        got = self.data.get(path)
        return None if got is None else (got, None)


def _per_call_us(fn: object, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()  # type: ignore[operator]
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topics", type=int, default=10_000)
    ap.add_argument("--prefixes", type=int, default=100)
    ap.add_argument("--calls", type=int, default=200_000)
    args = ap.parse_args()
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
    patterns[ResourcePattern(ResourceType.TOPIC, "*")] = [AclEntry("User:ops", "*", Operation.DESCRIBE, Permission.ALLOW)]
    started = time.perf_counter()
    authorizer = AclAuthorizer(AuthorizerConfig(frozenset({"User:admin"})), _MemoryZk(patterns))
    authorizer.load()
    load_s = time.perf_counter() - started
    app = KafkaPrincipal("User", "app-7")
    topic = ResourceType.TOPIC
    allowed = _per_call_us(lambda: authorizer.authorize(app, "10.0.0.1", write, topic, "topic-7"), args.calls)
    refused = _per_call_us(lambda: authorizer.authorize(app, "10.0.0.1", write, topic, "topic-8"), args.calls)
    prefixed = _per_call_us(
        lambda: authorizer.authorize(KafkaPrincipal("User", "team-3"), "h", write, topic, "team-3-orders"), args.calls
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
