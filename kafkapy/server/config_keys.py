"""Every broker configuration key kafkapy knows: Kafka's names, types, defaults and limits.

One definition per key. Kafka's ZooKeeper-era KafkaConfig is the reference; docs are our
own short words (Kafka's documentation has the long form). Keys Kafka has that are not here
are kept as unknown keys and reported by the caller.
"""

from __future__ import annotations

import re
from typing import Any

from kafkapy.common.config_def import (
    INT_MAX,
    LONG_MAX,
    NO_DEFAULT,
    ConfigDef,
    ConfigException,
    ConfigType,
    Importance,
    at_least,
    between,
    each_one_of,
    non_empty_string,
    one_of,
)

BOOLEAN, STRING, INT, SHORT, LONG = (
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.SHORT,
    ConfigType.LONG,
)
DOUBLE, LIST, CLASS, PASSWORD = ConfigType.DOUBLE, ConfigType.LIST, ConfigType.CLASS, ConfigType.PASSWORD
HIGH, MEDIUM, LOW = Importance.HIGH, Importance.MEDIUM, Importance.LOW

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
CLEANUP_POLICIES = ("compact", "delete")
# The smallest legal record (a v0 message's overhead): Kafka's floor for log.segment.bytes.
_RECORD_OVERHEAD_V0 = 14
# What kafkapy speaks: Kafka 3.9's wire format (see docs/architecture.md).
DEFAULT_INTER_BROKER_PROTOCOL_VERSION = "3.9-IV0"
DEFAULT_LOG_MESSAGE_FORMAT_VERSION = "3.0-IV1"
_VERSION = re.compile(r"(0\.\d+\.\d+(\.\d+)?|[1-9]\d*\.\d+(\.\d+)?)(-IV\d+)?")


def _kafka_version(name: str, value: Any) -> None:
    if not _VERSION.fullmatch(value):
        raise ConfigException(name, value, "Not a Kafka version such as 2.8, 3.9 or 3.9-IV0")


# One line per key reads as a table; the formatter would spread each over five lines.
# fmt: off
BROKER_CONFIG = (
    ConfigDef()
    # ---- ZooKeeper
    .define("zookeeper.connect", STRING, NO_DEFAULT, non_empty_string, HIGH, "host:port[,host:port...][/chroot] of ZooKeeper")
    .define("zookeeper.session.timeout.ms", INT, 18000, at_least(1), HIGH, "ZooKeeper session timeout")
    .define("zookeeper.connection.timeout.ms", INT, None, None, HIGH, "Max wait to connect to ZooKeeper; unset: the session timeout")
    .define("zookeeper.max.in.flight.requests", INT, 10, at_least(1), HIGH, "Unacknowledged ZooKeeper requests before blocking")
    .define("zookeeper.set.acl", BOOLEAN, False, None, HIGH, "Create znodes with secure ACLs")
    # ---- kafkapy's embedded ZooKeeper (no Kafka equivalent)
    .define("kafkapy.zookeeper.embedded.enable", BOOLEAN, True, None, MEDIUM,
            "Start a local ZooKeeper when zookeeper.connect is a loopback address and nothing answers there")
    .define("kafkapy.zookeeper.embedded.data.dir", STRING, None, None, LOW,
            "Data dir of the embedded ZooKeeper; unset: zookeeper-data beside the first log dir")
    # ---- kafkapy's bounds on what one request may ask for (no Kafka equivalent: Kafka 2.x
    # computes a replica assignment of any size before refusing it; these make a hostile
    # CreateTopics/CreatePartitions refused before anything is allocated)
    .define("kafkapy.topic.max.partitions", INT, 100000, at_least(1), LOW,
            "Most partitions one topic may be created with or grown to (CreateTopics, CreatePartitions, tools)")
    .define("kafkapy.request.max.partitions", INT, 1000000, at_least(1), LOW,
            "Most partitions one CreateTopics or CreatePartitions request may ask for, over all its topics")
    .define("kafkapy.request.max.elements", INT, 2000000, at_least(1), LOW,
            "Most array elements one request may decode into, over all its arrays (each is a Python object)")
    # ---- kafkapy's Prometheus endpoint (Kafka's equivalent is the JMX exporter agent)
    .define("kafkapy.metrics.port", INT, -1, at_least(-1), MEDIUM,
            "Port of the Prometheus metrics endpoint (/metrics); -1: no endpoint, 0: any free port")
    .define("kafkapy.metrics.host", STRING, "0.0.0.0", None, LOW,
            "Address the Prometheus metrics endpoint binds")
    # ---- General
    .define("broker.id", INT, -1, None, HIGH, "This broker's id; -1 lets the broker generate one from ZooKeeper")
    .define("broker.id.generation.enable", BOOLEAN, True, None, MEDIUM, "Allow broker id generation when broker.id is -1")
    .define("reserved.broker.max.id", INT, 1000, at_least(0), MEDIUM, "Highest id a user may configure; generated ids start above it")
    .define("broker.rack", STRING, None, None, MEDIUM, "Rack of this broker, for rack-aware replica assignment")
    .define("message.max.bytes", INT, 1048588, at_least(0), HIGH, "Largest record batch the broker accepts")
    .define("num.network.threads", INT, 3, at_least(1), HIGH, "Network threads (kafkapy: connection-handling workers)")
    .define("num.io.threads", INT, 8, at_least(1), HIGH, "Request handler threads/tasks")
    .define("background.threads", INT, 10, at_least(1), HIGH, "Threads for background tasks")
    .define("queued.max.requests", INT, 500, at_least(1), HIGH, "Requests queued for handlers before the network stops reading")
    # kafkapy's default bounds request memory where Kafka's (-1) does not: see docs/architecture.md.
    .define("queued.max.request.bytes", LONG, 268435456, None, MEDIUM, "Request bytes held in receive buffers before reading stops; -1: no limit")
    .define("request.timeout.ms", INT, 30000, at_least(0), HIGH, "Timeout of requests the broker itself sends")
    .define("fetch.max.bytes", INT, 57671680, at_least(1024), MEDIUM, "Most bytes one fetch response may carry")
    .define("max.incremental.fetch.session.cache.slots", INT, 1000, at_least(0), MEDIUM, "Most incremental fetch sessions (KIP-227) the broker keeps")
    .define("auto.create.topics.enable", BOOLEAN, True, None, HIGH, "Create a topic on first metadata request for it")
    .define("delete.topic.enable", BOOLEAN, True, None, HIGH, "Allow topic deletion")
    .define("compression.type", STRING, "producer", one_of(*COMPRESSION_TYPES), HIGH, "Topics' final compression; producer keeps the producer's")
    .define("authorizer.class.name", STRING, "", None, LOW, "kafka.security.authorizer.AclAuthorizer (or SimpleAclAuthorizer) turns ACLs on; empty: no authorization")
    # AclAuthorizer's own keys (Kafka reads them from the broker config it is given).
    .define("super.users", STRING, "", None, LOW, "Principals allowed everything, ';'-separated (User:admin;User:broker)")
    .define("allow.everyone.if.no.acl.found", BOOLEAN, False, None, LOW, "Allow a resource that has no ACL at all to everyone")
    # ---- Socket server
    .define("listeners", STRING, "PLAINTEXT://:9092", None, HIGH, "Comma-separated NAME://host:port listeners to bind")
    .define("advertised.listeners", STRING, None, None, HIGH, "Listeners published in ZooKeeper; unset: listeners")
    .define("listener.security.protocol.map", STRING,
            "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", None, LOW,
            "Listener name to security protocol")
    .define("control.plane.listener.name", STRING, None, None, HIGH, "Listener reserved for controller requests")
    .define("security.inter.broker.protocol", STRING, "PLAINTEXT", one_of(*SECURITY_PROTOCOLS), MEDIUM, "Protocol between brokers")
    .define("inter.broker.listener.name", STRING, None, None, MEDIUM, "Listener used between brokers")
    .define("socket.send.buffer.bytes", INT, 102400, None, HIGH, "SO_SNDBUF of sockets; -1: the OS default")
    # Kafka's default is 102400. Any fixed SO_RCVBUF turns off the kernel's receive-buffer
    # tuning, and a muted connection's queue of pipelined small requests then outgrew it:
    # segments were dropped and a producer stalled for 60 s (docs/architecture.md).
    .define("socket.receive.buffer.bytes", INT, -1, None, HIGH, "SO_RCVBUF of sockets; -1: the OS default")
    .define("socket.request.max.bytes", INT, 104857600, at_least(1), HIGH, "Largest request accepted")
    .define("socket.listen.backlog.size", INT, 50, at_least(1), MEDIUM, "Pending connections in the accept queue")
    .define("max.connections.per.ip", INT, INT_MAX, at_least(0), MEDIUM, "Connections allowed from one address")
    .define("max.connections.per.ip.overrides", STRING, "", None, MEDIUM, "host:count overrides of max.connections.per.ip")
    .define("max.connections", INT, INT_MAX, at_least(0), MEDIUM, "Connections allowed in all")
    .define("connections.max.idle.ms", LONG, 600000, None, MEDIUM, "Close connections idle this long")
    # ---- Log
    .define("log.dir", STRING, "/tmp/kafka-logs", None, HIGH, "Log directory, used when log.dirs is unset")
    .define("log.dirs", LIST, None, None, HIGH, "Comma-separated log directories; unset: log.dir")
    .define("num.partitions", INT, 1, at_least(1), MEDIUM, "Partitions of auto-created topics")
    .define("log.segment.bytes", INT, 1073741824, at_least(_RECORD_OVERHEAD_V0), HIGH, "Segment size before rolling")
    .define("log.roll.ms", LONG, None, None, HIGH, "Segment age before rolling; unset: log.roll.hours")
    .define("log.roll.hours", INT, 168, at_least(1), HIGH, "Segment age before rolling, in hours")
    .define("log.roll.jitter.ms", LONG, None, None, HIGH, "Random jitter taken off the roll time; unset: log.roll.jitter.hours")
    .define("log.roll.jitter.hours", INT, 0, at_least(0), HIGH, "Roll jitter in hours")
    .define("log.retention.ms", LONG, None, None, HIGH, "Retention time; wins over minutes and hours; -1: forever")
    .define("log.retention.minutes", INT, None, None, HIGH, "Retention time in minutes; wins over hours")
    .define("log.retention.hours", INT, 168, None, HIGH, "Retention time in hours")
    .define("log.retention.bytes", LONG, -1, None, HIGH, "Partition size kept; -1: no size limit")
    .define("log.retention.check.interval.ms", LONG, 300000, at_least(1), MEDIUM, "How often retention runs")
    .define("log.cleanup.policy", LIST, "delete", each_one_of(*CLEANUP_POLICIES), MEDIUM, "delete and/or compact")
    .define("log.cleaner.enable", BOOLEAN, True, None, MEDIUM, "Run the log cleaner (compaction)")
    .define("log.cleaner.threads", INT, 1, at_least(0), MEDIUM, "Log cleaner threads")
    .define("log.cleaner.io.max.bytes.per.second", DOUBLE, 1.7976931348623157e308, None, MEDIUM, "Cleaner I/O throttle")
    .define("log.cleaner.dedupe.buffer.size", LONG, 134217728, None, MEDIUM, "Cleaner dedupe memory, all threads")
    .define("log.cleaner.io.buffer.size", INT, 524288, at_least(0), MEDIUM, "Cleaner I/O buffer memory")
    .define("log.cleaner.io.buffer.load.factor", DOUBLE, 0.9, None, MEDIUM, "Dedupe buffer load factor")
    .define("log.cleaner.backoff.ms", LONG, 15000, at_least(0), MEDIUM, "Cleaner sleep when there is nothing to clean")
    .define("log.cleaner.min.cleanable.ratio", DOUBLE, 0.5, between(0, 1), MEDIUM, "Dirty ratio that makes a log cleanable")
    .define("log.cleaner.delete.retention.ms", LONG, 86400000, at_least(0), MEDIUM, "How long tombstones are kept")
    .define("log.cleaner.min.compaction.lag.ms", LONG, 0, at_least(0), MEDIUM, "Minimum age before compaction")
    .define("log.cleaner.max.compaction.lag.ms", LONG, LONG_MAX, at_least(1), MEDIUM, "Maximum age before compaction")
    .define("log.index.size.max.bytes", INT, 10485760, at_least(4), MEDIUM, "Maximum size of an offset index")
    .define("log.index.interval.bytes", INT, 4096, at_least(0), MEDIUM, "Bytes between offset index entries")
    .define("log.flush.interval.messages", LONG, LONG_MAX, at_least(1), HIGH, "Messages between forced fsyncs")
    .define("log.flush.interval.ms", LONG, None, None, HIGH, "Time between forced fsyncs; unset: log.flush.scheduler.interval.ms")
    .define("log.flush.scheduler.interval.ms", LONG, LONG_MAX, None, HIGH, "How often the flusher checks logs")
    .define("log.flush.offset.checkpoint.interval.ms", INT, 60000, at_least(0), HIGH, "Recovery point checkpoint interval")
    .define("log.flush.start.offset.checkpoint.interval.ms", INT, 60000, at_least(0), HIGH, "Log start offset checkpoint interval")
    .define("log.segment.delete.delay.ms", LONG, 60000, at_least(0), HIGH, "Delay before deleting a segment's files")
    .define("log.preallocate", BOOLEAN, False, None, MEDIUM, "Preallocate segment files")
    .define("num.recovery.threads.per.data.dir", INT, 1, at_least(1), HIGH, "Threads per log dir for recovery and flush on shutdown")
    .define("min.insync.replicas", INT, 1, at_least(1), HIGH, "ISR size needed to accept acks=all writes")
    .define("log.message.format.version", STRING, DEFAULT_LOG_MESSAGE_FORMAT_VERSION, _kafka_version, MEDIUM,
            "Message format version (accepted; kafkapy writes record batch v2)")
    .define("log.message.timestamp.type", STRING, "CreateTime", one_of(*TIMESTAMP_TYPES), MEDIUM, "CreateTime or LogAppendTime")
    .define("log.message.timestamp.difference.max.ms", LONG, LONG_MAX, at_least(0), MEDIUM, "Largest allowed CreateTime skew")
    .define("log.message.downconversion.enable", BOOLEAN, True, None, LOW, "Down-convert for old consumers")
    .define("create.topic.policy.class.name", CLASS, None, None, LOW, "Create topic policy (accepted, not applied)")
    .define("alter.config.policy.class.name", CLASS, None, None, LOW, "Alter config policy (accepted, not applied)")
    # ---- Replication
    .define("default.replication.factor", INT, 1, at_least(1), MEDIUM, "Replication factor of auto-created topics")
    .define("controller.socket.timeout.ms", INT, 30000, None, MEDIUM, "Socket timeout of controller-to-broker channels")
    .define("replica.lag.time.max.ms", LONG, 30000, None, HIGH, "A follower not caught up for this long leaves the ISR")
    .define("replica.socket.timeout.ms", INT, 30000, None, HIGH, "Socket timeout of replica fetchers")
    .define("replica.socket.receive.buffer.bytes", INT, 65536, None, HIGH, "SO_RCVBUF of replica fetchers")
    .define("replica.fetch.max.bytes", INT, 1048576, at_least(0), MEDIUM, "Bytes fetched per partition by a follower")
    .define("replica.fetch.wait.max.ms", INT, 500, None, MEDIUM, "Max wait of a follower fetch")
    .define("replica.fetch.min.bytes", INT, 1, None, MEDIUM, "Min bytes of a follower fetch response")
    .define("replica.fetch.backoff.ms", INT, 1000, at_least(0), MEDIUM, "Follower sleep after a fetch error")
    .define("quota.window.num", INT, 11, at_least(1), LOW, "Samples kept for client quotas")
    .define("quota.window.size.seconds", INT, 1, at_least(1), LOW, "Time span of each client quota sample")
    .define("quota.producer.default", LONG, LONG_MAX, at_least(1), HIGH, "Deprecated static produce byte rate per client id")
    .define("quota.consumer.default", LONG, LONG_MAX, at_least(1), HIGH, "Deprecated static fetch byte rate per client id")
    .define("replication.quota.window.num", INT, 11, at_least(1), LOW, "Samples kept for replication quotas")
    .define("replication.quota.window.size.seconds", INT, 1, at_least(1), LOW, "Time span of each replication quota sample")
    .define("replica.fetch.response.max.bytes", INT, 10485760, at_least(0), MEDIUM, "Bytes of a whole follower fetch response")
    .define("num.replica.fetchers", INT, 1, None, HIGH, "Fetcher threads per source broker")
    .define("replica.high.watermark.checkpoint.interval.ms", LONG, 5000, None, HIGH, "High watermark checkpoint interval")
    .define("fetch.purgatory.purge.interval.requests", INT, 1000, None, MEDIUM, "Fetch purgatory purge interval")
    .define("producer.purgatory.purge.interval.requests", INT, 1000, None, MEDIUM, "Produce purgatory purge interval")
    .define("delete.records.purgatory.purge.interval.requests", INT, 1, None, MEDIUM, "Delete-records purgatory purge interval")
    .define("auto.leader.rebalance.enable", BOOLEAN, True, None, HIGH, "Move leadership back to preferred replicas")
    .define("leader.imbalance.per.broker.percentage", INT, 10, None, HIGH, "Imbalance that triggers a rebalance")
    .define("leader.imbalance.check.interval.seconds", LONG, 300, at_least(1), HIGH, "How often imbalance is checked")
    .define("unclean.leader.election.enable", BOOLEAN, False, None, HIGH, "Allow out-of-ISR leaders (may lose data)")
    .define("inter.broker.protocol.version", STRING, DEFAULT_INTER_BROKER_PROTOCOL_VERSION, _kafka_version, MEDIUM,
            "Protocol version between brokers (accepted and exposed)")
    .define("replica.selector.class", STRING, None, None, MEDIUM, "Follower-fetching replica selector (accepted)")
    # ---- Controlled shutdown
    .define("controlled.shutdown.enable", BOOLEAN, True, None, MEDIUM, "Move leadership away before shutting down")
    .define("controlled.shutdown.max.retries", INT, 3, None, MEDIUM, "Controlled shutdown attempts")
    .define("controlled.shutdown.retry.backoff.ms", LONG, 5000, None, MEDIUM, "Wait between controlled shutdown attempts")
    # ---- Group coordinator
    .define("group.min.session.timeout.ms", INT, 6000, None, MEDIUM, "Smallest session timeout a member may ask for")
    .define("group.max.session.timeout.ms", INT, 1800000, None, MEDIUM, "Largest session timeout a member may ask for")
    .define("group.initial.rebalance.delay.ms", INT, 3000, None, MEDIUM, "Wait for more members before a new group's first rebalance")
    .define("group.max.size", INT, INT_MAX, at_least(1), MEDIUM, "Members allowed in one group")
    # ---- Offset management
    .define("offset.metadata.max.bytes", INT, 4096, None, HIGH, "Largest metadata string of an offset commit")
    .define("offsets.load.buffer.size", INT, 5242880, at_least(1), HIGH, "Read size when loading offsets")
    .define("offsets.topic.replication.factor", SHORT, 3, at_least(1), HIGH, "Replication factor of __consumer_offsets")
    .define("offsets.topic.num.partitions", INT, 50, at_least(1), HIGH, "Partitions of __consumer_offsets")
    .define("offsets.topic.segment.bytes", INT, 104857600, at_least(1), HIGH, "Segment size of __consumer_offsets")
    .define("offsets.topic.compression.codec", INT, 0, None, HIGH, "Compression codec of __consumer_offsets")
    .define("offsets.retention.minutes", INT, 10080, at_least(1), HIGH, "How long committed offsets of empty groups are kept")
    .define("offsets.retention.check.interval.ms", LONG, 600000, at_least(1), HIGH, "How often stale offsets are removed")
    .define("offsets.commit.timeout.ms", INT, 5000, at_least(1), HIGH, "Wait for an offset commit to be replicated")
    .define("offsets.commit.required.acks", SHORT, -1, None, HIGH, "acks of offset commit writes")
    # ---- Transactions
    .define("transactional.id.expiration.ms", INT, 604800000, at_least(1), HIGH, "Idle time before a transactional id expires")
    .define("transaction.max.timeout.ms", INT, 900000, at_least(1), HIGH, "Largest transaction timeout allowed")
    .define("transaction.state.log.load.buffer.size", INT, 5242880, at_least(1), HIGH, "Read size when loading transactions")
    .define("transaction.state.log.replication.factor", SHORT, 3, at_least(1), HIGH, "Replication factor of __transaction_state")
    .define("transaction.state.log.num.partitions", INT, 50, at_least(1), HIGH, "Partitions of __transaction_state")
    .define("transaction.state.log.segment.bytes", INT, 104857600, at_least(1), HIGH, "Segment size of __transaction_state")
    .define("transaction.state.log.min.isr", INT, 2, at_least(1), HIGH, "min.insync.replicas of __transaction_state")
    .define("transaction.abort.timed.out.transaction.cleanup.interval.ms", INT, 10000, at_least(1), LOW, "How often timed-out transactions are aborted")
    .define("transaction.remove.expired.transaction.cleanup.interval.ms", INT, 3600000, at_least(1), LOW, "How often expired transactional ids are removed")
    # Producer state of each partition log (idempotent producers). Kafka 2.x expired producer
    # ids after transactional.id.expiration.ms; KIP-854 gave them their own key and default.
    .define("producer.id.expiration.ms", INT, 86400000, at_least(1), LOW, "Idle time before a partition forgets a producer id")
    # Internal in Kafka (not in its documentation): how often idle producer ids are looked for.
    .define("producer.id.expiration.check.interval.ms", INT, 600000, at_least(1), LOW, "How often idle producer ids are expired")
    # ---- Security (kafkapy/server/security/; each key may be prefixed listener.name.<l>.)
    .define("ssl.keystore.type", STRING, "JKS", None, MEDIUM, "Key store format: PEM or PKCS12 (JKS is Java's own)")
    .define("ssl.keystore.location", STRING, None, None, HIGH, "Key store file")
    .define("ssl.keystore.password", PASSWORD, None, None, HIGH, "Key store password")
    .define("ssl.keystore.certificate.chain", PASSWORD, None, None, HIGH, "PEM certificate chain, inline (KIP-651)")
    .define("ssl.keystore.key", PASSWORD, None, None, HIGH, "PEM private key, inline (KIP-651)")
    .define("ssl.key.password", PASSWORD, None, None, HIGH, "Private key password")
    .define("ssl.truststore.type", STRING, "JKS", None, MEDIUM, "Trust store format: PEM or PKCS12")
    .define("ssl.truststore.location", STRING, None, None, HIGH, "Trust store file")
    .define("ssl.truststore.password", PASSWORD, None, None, HIGH, "Trust store password")
    .define("ssl.truststore.certificates", PASSWORD, None, None, HIGH, "PEM trusted certificates, inline (KIP-651)")
    .define("ssl.client.auth", STRING, "none", one_of("required", "requested", "none"), MEDIUM, "Whether clients must show a certificate")
    .define("ssl.enabled.protocols", LIST, "TLSv1.2,TLSv1.3", None, MEDIUM, "TLS versions accepted")
    .define("ssl.protocol", STRING, "TLSv1.3", None, MEDIUM, "TLS protocol of the context")
    .define("ssl.cipher.suites", LIST, "", None, LOW, "Cipher suites (OpenSSL names); empty: the defaults")
    .define("ssl.endpoint.identification.algorithm", STRING, "https", None, LOW, "https: clients verify the host name")
    .define("ssl.principal.mapping.rules", STRING, "DEFAULT", None, LOW, "RULE:pattern/replacement/[LU],...,DEFAULT")
    .define("sasl.enabled.mechanisms", LIST, "GSSAPI", None, MEDIUM, "SASL mechanisms offered")
    .define("sasl.mechanism.inter.broker.protocol", STRING, "GSSAPI", None, MEDIUM, "SASL mechanism between brokers")
    .define("sasl.jaas.config", PASSWORD, None, None, MEDIUM, "JAAS login line (listener.name.<l>.<mechanism>. prefix)")
    .define("sasl.kerberos.service.name", STRING, None, None, MEDIUM, "Kerberos service (GSSAPI is not supported)")
    # Delegation tokens (KIP-48): enabled when the secret is set; master.key is the older name.
    .define("delegation.token.secret.key", PASSWORD, None, None, MEDIUM, "Secret the token HMACs are made with; unset: tokens disabled")
    .define("delegation.token.master.key", PASSWORD, None, None, MEDIUM, "Deprecated name of delegation.token.secret.key")
    .define("delegation.token.max.lifetime.ms", LONG, 604800000, at_least(1), MEDIUM, "Longest a token can be renewed to")
    .define("delegation.token.expiry.time.ms", LONG, 86400000, at_least(1), MEDIUM, "Default renewal period of a token")
    .define("delegation.token.expiry.check.interval.ms", LONG, 3600000, at_least(1), LOW, "How often expired tokens are removed")
    .define("connections.max.reauth.ms", LONG, 0, None, MEDIUM, "Longest session before re-authentication (KIP-368); 0: none")
    # Kafka's bound (since 3.0.2/3.1.2/3.2.3, CVE-2022-34917) on what a client may send before it authenticated.
    .define("sasl.server.max.receive.size", INT, 524288, at_least(1), LOW, "Largest frame accepted before SASL authentication")
    .define("metric.reporters", LIST, "", None, LOW, "Metric reporter classes (accepted)")
    .define("client.id", STRING, "", None, LOW, "Client id of the broker's own clients")
    .define("principal.builder.class", CLASS, None, None, MEDIUM, "Principal builder (accepted)")
)
# fmt: on
