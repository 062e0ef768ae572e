"""Meters of components with no handle on their broker (Kafka keeps these in its global registry too).

Each broker is its own process, so process-wide is per broker. All are recorded off the event
loop (io threads, kazoo threads, the controller's event thread) and each has its own lock.
"""

from __future__ import annotations

from kafkapy.server.metrics.meters import Counter, Timer

# kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs: every fsync of a log's segments.
LOG_FLUSH = Timer()
# kafka.server:type=ZooKeeperClientMetrics,name=ZooKeeperRequestLatencyMs
ZOOKEEPER_REQUEST_LATENCY = Timer()
# kafka.controller:type=ControllerStats,name=LeaderElectionRateAndTimeMs
LEADER_ELECTION = Timer()
# kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec
UNCLEAN_LEADER_ELECTIONS = Counter()
# kafka.server:type=ReplicaManager,name=IsrShrinksPerSec / IsrExpandsPerSec
ISR_SHRINKS = Counter()
ISR_EXPANDS = Counter()
# kafka.server:type=BrokerTopicMetrics,name=ReplicationBytesInPerSec: what the fetchers appended
REPLICATION_BYTES_IN = Counter()
# kafka.server:type=SessionExpireListener,name=ZooKeeperExpiresPerSec / ZooKeeperDisconnectsPerSec
ZOOKEEPER_EXPIRES = Counter()
ZOOKEEPER_DISCONNECTS = Counter()
