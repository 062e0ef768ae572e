"""What only ZooKeeper knows, read when the console was given `--zookeeper`: every listener a
broker registered (Metadata names just the one the console connected through)."""

from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from kafkapy.zk.cluster_znodes import BrokerIdsZNode, BrokerIdZNode
from kafkapy.zk.errors import ZooKeeperClientTimeoutError

# A page waits for this: shorter than Kafka's zookeeper.connection.timeout.ms, long enough for a
# ZooKeeper that is only slow.
ZK_TIMEOUT_S = 5.0


def broker_endpoints(zookeeper_connect: str) -> dict[int, tuple[str, ...]]:
    """Broker id -> its registered endpoints as `LISTENER://host:port`; blocking. Raises
    ZooKeeperClientTimeoutError when no ZooKeeper server answers."""
    zk = KazooClient(hosts=zookeeper_connect, timeout=ZK_TIMEOUT_S, read_only=True)
    try:
        zk.start(timeout=ZK_TIMEOUT_S)
    except KazooTimeoutError as e:
        zk.stop()
        zk.close()
        raise ZooKeeperClientTimeoutError(
            f"Timed out waiting for connection to {zookeeper_connect} after {ZK_TIMEOUT_S * 1000:.0f} ms"
        ) from e
    try:
        out: dict[int, tuple[str, ...]] = {}
        for child in zk.get_children(BrokerIdsZNode.path()):
            try:
                data, _ = zk.get(BrokerIdZNode.path(int(child)))
            except NoNodeError:  # the broker went away between the two reads
                continue
            info = BrokerIdZNode.decode(int(child), data)
            out[info.id] = tuple(e.connection_string for e in info.endpoints)
        return out
    finally:
        zk.stop()
        zk.close()
