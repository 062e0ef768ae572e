"""ACL authorization on a real 3-broker cluster (authorizer.class.name=AclAuthorizer).

Clients log in with SASL PLAIN (users admin, alice, bob, carol, dave); the brokers talk to each
other as User:broker over their own SASL listener; admin and broker are super users. The PLAINTEXT
listener the test harness uses is User:ANONYMOUS, which holds no ACL.
Invariants: for each API family a principal without the ACL is refused with the error the client
reports for Kafka, and the same request succeeds once the ACL exists; DENY wins over ALLOW;
prefixed and wildcard ACLs apply; an ACL created through one broker is enforced by every broker
within seconds; super users need no ACL; a broker without ClusterAction cannot send
inter-broker requests."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from kafkapy.client.connection import BrokerConnection
from kafkapy.client.sasl_client import ClientSecurity
from kafkapy.protocol.errors import (
    ClusterAuthorizationException,
    TopicAuthorizationException,
)
from kafkapy.testing import KafkapyCluster, free_port

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret",
         "dave": "dave-secret", "broker": "broker-secret"}  # fmt: skip


def _jaas(user: str) -> str:
    users = " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
    return (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{user}" password="{USERS[user]}" {users};'
    )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KafkapyCluster, dict[int, int]]]:
    sasl_ports: dict[int, int] = {}

    def overrides(broker_id: int, port: int) -> dict[str, str]:
        sasl_ports[broker_id] = free_port()
        return {
            "listeners": f"PLAINTEXT://127.0.0.1:{port},INTERNAL://127.0.0.1:{free_port()},"
            f"SASL_PLAINTEXT://127.0.0.1:{sasl_ports[broker_id]}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.internal.plain.sasl.jaas.config": _jaas("broker"),
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": _jaas("broker"),
        }

    c = KafkapyCluster(
        tmp_path_factory.mktemp("acl"),
        3,
        {
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:admin;User:broker",
            "auto.create.topics.enable": "false",
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
        },
        overrides,
    )
    try:
        c.start()
        yield c, sasl_ports
    finally:
        c.stop()


def _bootstrap(ports: dict[int, int], only: int | None = None) -> str:
    return ",".join(f"127.0.0.1:{p}" for b, p in sorted(ports.items()) if only is None or b == only)


def _conf(ports: dict[int, int], user: str, only: int | None = None) -> dict[str, Any]:
    return {
        "bootstrap.servers": _bootstrap(ports, only),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": USERS[user],
    }


def _admin(ports: dict[int, int], user: str = "admin", only: int | None = None) -> AdminClient:
    return AdminClient(_conf(ports, user, only))


def _allow(kind: ResourceType, name: str, user: str, op: AclOperation,
           pattern: ResourcePatternType = ResourcePatternType.LITERAL,
           permission: AclPermissionType = AclPermissionType.ALLOW) -> AclBinding:  # fmt: skip
    return AclBinding(kind, name, pattern, user if ":" in user else f"User:{user}", "*", op, permission)


def _grant(ports: dict[int, int], *bindings: AclBinding, only: int | None = None, wait: bool = True) -> None:
    """Create the ACLs; unless `wait` is False, until every broker's cache holds them."""
    admin = _admin(ports, only=only)  # kept alive until the futures are done
    for f in admin.create_acls(list(bindings)).values():
        f.result(30)
    if wait:
        for b in ports:
            for binding in bindings:
                assert _eventually(lambda b=b, binding=binding: _cached(ports[b], binding)), (b, binding)


def _cached(port: int, b: AclBinding) -> bool:
    """Whether the broker on `port` describes the binding (asked as admin, over one connection)."""
    security = ClientSecurity("SASL_PLAINTEXT", None, "PLAIN", "admin", USERS["admin"])
    with BrokerConnection("127.0.0.1", port, "acl-test", 10.0, security=security) as conn:
        answer = conn.send(29, 2, {
            "resource_type_filter": b.restype.value, "resource_name_filter": b.name,
            "pattern_type_filter": b.resource_pattern_type.value, "principal_filter": b.principal,
            "host_filter": b.host, "operation": b.operation.value, "permission_type": b.permission_type.value,
        })  # fmt: skip
    return answer.error_code == 0 and len(answer.resources) == 1


def _topic(ports: dict[int, int], prefix: str, partitions: int = 1) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = _admin(ports)
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(60)
    return name


def _code(exc: BaseException) -> int:
    err = exc.args[0] if exc.args else None
    return err.code() if isinstance(err, KafkaError) else -999


def _eventually(check: Callable[[], bool], timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return False


def _produce(
    ports: dict[int, int], user: str, topic: str, n: int = 3, extra: dict[str, Any] | None = None
) -> list[Any]:
    """Delivery errors (None for delivered messages)."""
    results: list[Any] = []
    producer = Producer({**_conf(ports, user), "message.timeout.ms": 10000, **(extra or {})})
    for i in range(n):
        producer.produce(topic, f"m{i}".encode(), on_delivery=lambda err, msg: results.append(err))
    producer.flush(20)
    return results


def _consume(
    ports: dict[int, int], user: str, topic: str, group: str, want: int, timeout_s: float = 20.0
) -> tuple[list[bytes], list[int]]:
    """(values, error codes) from a subscribed consumer."""
    consumer = Consumer({**_conf(ports, user), "group.id": group, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    values: list[bytes] = []
    errors: list[int] = []
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and len(values) < want:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                errors.append(msg.error().code())
                if msg.error().code() in (
                    KafkaError.TOPIC_AUTHORIZATION_FAILED,
                    KafkaError.GROUP_AUTHORIZATION_FAILED,
                ):
                    break
                continue
            values.append(msg.value())
    finally:
        consumer.close()
    return values, errors


# -- produce and consume ----------------------------------------------------------------------


@pytest.mark.timeout(180)
def test_produce_needs_write_on_the_topic(cluster: tuple[KafkapyCluster, dict[int, int]]) -> None:
    _, ports = cluster
    topic = _topic(ports, "produce")
    refused = _produce(ports, "alice", topic, n=1)
    assert [e.code() for e in refused] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    _grant(ports, _allow(ResourceType.TOPIC, topic, "alice", AclOperation.WRITE))
    assert _eventually(lambda: _produce(ports, "alice", topic, n=3) == [None] * 3)


@pytest.mark.timeout(180)
def test_consume_needs_read_on_topic_and_group(cluster: tuple[KafkapyCluster, dict[int, int]]) -> None:
    _, ports = cluster
    topic = _topic(ports, "consume")
    assert _produce(ports, "admin", topic, n=3) == [None] * 3
    group = f"g-{topic}"
    refusals = {KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED}
    _, errors = _consume(ports, "bob", topic, group, 3, timeout_s=10)
    assert refusals & set(errors), errors
    # Read on the topic, none on the group: the group coordinator refuses.
    _grant(ports, _allow(ResourceType.TOPIC, topic, "bob", AclOperation.READ))
    _, errors = _consume(ports, "bob", topic, group, 3, timeout_s=10)
    assert KafkaError.GROUP_AUTHORIZATION_FAILED in errors, errors
    _grant(ports, _allow(ResourceType.GROUP, group, "bob", AclOperation.READ))
    values, errors = _consume(ports, "bob", topic, group, 3)
    assert sorted(values) == [b"m0", b"m1", b"m2"], errors


@pytest.mark.timeout(180)
def test_deny_wins_over_allow_and_wildcards_apply(cluster: tuple[KafkapyCluster, dict[int, int]]) -> None:
    _, ports = cluster
    allowed = _topic(ports, "wild")
    denied = _topic(ports, "wild")
    # Everyone may write every topic (wildcard principal and resource), carol is denied one.
    _grant(
        ports,
        _allow(ResourceType.TOPIC, "*", "User:*", AclOperation.WRITE),
        _allow(ResourceType.TOPIC, denied, "carol", AclOperation.ALL, permission=AclPermissionType.DENY),
    )
    try:
        assert _eventually(lambda: _produce(ports, "carol", allowed, n=1) == [None])
        assert [e.code() for e in _produce(ports, "carol", denied, n=1)] == [
            KafkaError.TOPIC_AUTHORIZATION_FAILED
        ]
        assert _produce(ports, "dave", denied, n=1) == [None]
    finally:
        admin = _admin(ports)
        for f in admin.delete_acls(
            [
                AclBindingFilter(
                    ResourceType.TOPIC,
                    "*",
                    ResourcePatternType.LITERAL,
                    "User:*",
                    "*",
                    AclOperation.WRITE,
                    AclPermissionType.ALLOW,
                )
            ]  # fmt: skip
        ).values():
            f.result(30)
        # The module's later tests expect WRITE refused: wait until no broker's cache still allows it.
        wildcard = _allow(ResourceType.TOPIC, "*", "User:*", AclOperation.WRITE)
        for b in ports:
            assert _eventually(lambda b=b: not _cached(ports[b], wildcard)), b


@pytest.mark.timeout(120)
def test_super_users_bypass_even_a_deny_for_everyone(cluster: tuple[KafkapyCluster, dict[int, int]]) -> None:
    _, ports = cluster
    topic = _topic(ports, "super")
    _grant(
        ports,
        _allow(ResourceType.TOPIC, topic, "User:*", AclOperation.ALL, permission=AclPermissionType.DENY),
    )
    assert _produce(ports, "admin", topic, n=2) == [None, None]
    assert [e.code() for e in _produce(ports, "dave", topic, n=1)] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]


@pytest.mark.timeout(180)
def test_prefixed_acl_covers_topic_creation_and_deletion(
    cluster: tuple[KafkapyCluster, dict[int, int]],
) -> None:
    _, ports = cluster
    prefix = f"carol-{uuid.uuid4().hex[:6]}-"
    admin = _admin(ports, "carol")
    name = prefix + "a"
    with pytest.raises(KafkaException) as e:
        admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    assert _code(e.value) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    _grant(
        ports,
        _allow(ResourceType.TOPIC, prefix, "carol", AclOperation.CREATE, ResourcePatternType.PREFIXED),
        _allow(ResourceType.TOPIC, prefix, "carol", AclOperation.DESCRIBE, ResourcePatternType.PREFIXED),
    )
    assert _eventually(lambda: _try(lambda: admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)))
    # Not under the prefix: still refused.
    other = f"dave-{uuid.uuid4().hex[:6]}"
    with pytest.raises(KafkaException) as e:
        admin.create_topics([NewTopic(other, 1, 1)])[other].result(30)
    assert _code(e.value) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # CreatePartitions needs Alter, DeleteTopics Delete.
    with pytest.raises(KafkaException) as e:
        admin.create_partitions([NewPartitions(name, 2)])[name].result(30)
    assert _code(e.value) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    with pytest.raises(KafkaException) as e:
        admin.delete_topics([name])[name].result(30)
    assert _code(e.value) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    _grant(
        ports,
        _allow(ResourceType.TOPIC, prefix, "carol", AclOperation.ALTER, ResourcePatternType.PREFIXED),
        _allow(ResourceType.TOPIC, prefix, "carol", AclOperation.DELETE, ResourcePatternType.PREFIXED),
    )
    assert _eventually(
        lambda: _try(lambda: admin.create_partitions([NewPartitions(name, 2)])[name].result(30))
    )
    assert _eventually(lambda: _try(lambda: admin.delete_topics([name])[name].result(30)))


def _try(call: Callable[[], Any]) -> bool:
    try:
        call()
        return True
    except KafkaException:
        return False


@pytest.mark.timeout(180)
def test_configs_need_describe_and_alter_configs(cluster: tuple[KafkapyCluster, dict[int, int]]) -> None:
    _, ports = cluster
    topic = _topic(ports, "configs")
    admin = _admin(ports, "dave")
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    with pytest.raises(KafkaException) as e:
        admin.describe_configs([resource])[resource].result(30)
    assert _code(e.value) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    broker = ConfigResource(ConfigResource.Type.BROKER, "0")
    with pytest.raises(KafkaException) as e:
        admin.describe_configs([broker])[broker].result(30)
    assert _code(e.value) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    _grant(ports, _allow(ResourceType.TOPIC, topic, "dave", AclOperation.DESCRIBE_CONFIGS))
    assert _eventually(lambda: _try(lambda: admin.describe_configs([resource])[resource].result(30)))
    alter = ConfigResource(ConfigResource.Type.TOPIC, topic, set_config={"retention.ms": "3600000"})
    with pytest.raises(KafkaException) as e:
        admin.alter_configs([alter])[alter].result(30)
    assert _code(e.value) == KafkaError.TOPIC_AUTHORIZATION_FAILED


# -- groups, cluster-level APIs, authorized operations ------------------------------------------


@pytest.mark.timeout(180)
def test_group_listing_and_authorized_operations(cluster: tuple[KafkapyCluster, dict[int, int]]) -> None:
    _, ports = cluster
    topic = _topic(ports, "groups")
    assert _produce(ports, "admin", topic, n=1) == [None]
    group = f"g-{topic}"
    values, _ = _consume(ports, "admin", topic, group, 1)
    assert values == [b"m0"]
    dave = _admin(ports, "dave")
    listed = dave.list_consumer_groups().result(30)
    assert group not in {g.group_id for g in listed.valid}
    with pytest.raises(KafkaException) as e:
        dave.describe_consumer_groups([group])[group].result(30)
    assert _code(e.value) == KafkaError.GROUP_AUTHORIZATION_FAILED
    _grant(ports, _allow(ResourceType.GROUP, group, "dave", AclOperation.DESCRIBE))
    assert _eventually(lambda: group in {g.group_id for g in dave.list_consumer_groups().result(30).valid})
    # FindCoordinator may reach a broker whose cache follows a moment later: asked until it has.
    described: list[Any] = []
    assert _eventually(
        lambda: _try(
            lambda: described.append(
                dave.describe_consumer_groups([group], include_authorized_operations=True)[group].result(30)
            )
        )
    )
    assert set(described[0].authorized_operations) == {AclOperation.DESCRIBE}
    # The cluster: dave may not Describe it (0 operations), admin holds everything.
    assert not dave.describe_cluster(include_authorized_operations=True).result(30).authorized_operations
    admin = _admin(ports)
    everything = admin.describe_cluster(include_authorized_operations=True).result(30)
    assert {AclOperation.ALTER, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE} <= set(
        everything.authorized_operations
    )
    # DescribeAcls needs Describe on the cluster (librdkafka drops this top-level error: asked raw).
    security = ClientSecurity("SASL_PLAINTEXT", None, "PLAIN", "dave", USERS["dave"])
    with BrokerConnection("127.0.0.1", ports[0], "acl-test", 10.0, security=security) as conn:
        answer = conn.send(29, 2, {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
                                   "principal_filter": None, "host_filter": None, "operation": 1,
                                   "permission_type": 1})  # fmt: skip
    assert answer.error_code == ClusterAuthorizationException.code and answer.resources == []


@pytest.mark.timeout(180)
def test_metadata_hides_topics_without_describe(cluster: tuple[KafkapyCluster, dict[int, int]]) -> None:
    _, ports = cluster
    visible = _topic(ports, "md")
    hidden = _topic(ports, "md")
    _grant(ports, _allow(ResourceType.TOPIC, visible, "dave", AclOperation.READ))  # Read implies Describe
    admin = _admin(ports, "dave")

    def listing() -> set[str]:
        return set(admin.list_topics(timeout=10).topics)

    assert _eventually(lambda: visible in listing())
    assert hidden not in listing()
    md = admin.list_topics(hidden, timeout=10)
    assert md.topics[hidden].error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # Metadata v8+'s topic authorized operations: Read (and the Describe it implies).
    from confluent_kafka import TopicCollection

    described = admin.describe_topics(TopicCollection([visible]), include_authorized_operations=True)[
        visible
    ].result(30)
    assert set(described.authorized_operations) == {AclOperation.READ, AclOperation.DESCRIBE}


@pytest.mark.timeout(180)
def test_transactions_need_transactional_id_write(cluster: tuple[KafkapyCluster, dict[int, int]]) -> None:
    _, ports = cluster
    topic = _topic(ports, "txn")
    txn_id = f"tx-{topic}"
    conf = {**_conf(ports, "alice"), "transactional.id": txn_id, "transaction.timeout.ms": 10000}
    producer = Producer(conf)
    with pytest.raises(KafkaException) as e:
        producer.init_transactions(20)
    assert _code(e.value) == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    _grant(
        ports,
        _allow(ResourceType.TRANSACTIONAL_ID, txn_id, "alice", AclOperation.WRITE),
        _allow(ResourceType.TOPIC, topic, "alice", AclOperation.WRITE),
    )
    time.sleep(1)
    producer = Producer(conf)
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"txn")
    producer.commit_transaction(30)
    # The commit marker reached the partition leader (another broker, on its SASL inter-broker
    # listener, as a principal holding ClusterAction): a read_committed consumer sees the record.
    consumer = Consumer({**_conf(ports, "admin"), "group.id": f"g-{topic}", "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed"})  # fmt: skip
    consumer.assign([TopicPartition(topic, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while not got and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
    finally:
        consumer.close()
    assert got == [b"txn"]


@pytest.mark.timeout(120)
def test_cluster_admin_apis_need_cluster_alter_or_describe(
    cluster: tuple[KafkapyCluster, dict[int, int]],
) -> None:
    c, ports = cluster
    topic = _topic(ports, "admin")
    refused = ClusterAuthorizationException.code
    security = ClientSecurity("SASL_PLAINTEXT", None, "PLAIN", "dave", USERS["dave"])
    controller = c.brokers[0].broker_id  # any broker answers the refusal before asking the controller
    with BrokerConnection("127.0.0.1", ports[controller], "acl-test", 10.0, security=security) as conn:
        assert conn.send(46, 0, {"timeout_ms": 1000, "topics": None}).error_code == refused
        assert conn.send(45, 0, {"timeout_ms": 1000, "topics": []}).error_code == refused
        assert conn.send(35, 4, {"topics": None}).error_code == refused
        assert conn.send(50, 0, {"users": None}).error_code == refused
        elect = conn.send(43, 2, {"election_type": 0, "timeout_ms": 1000,
                                  "topic_partitions": [{"topic": topic, "partitions": [0]}]})  # fmt: skip
        assert elect.error_code == refused
        deleted = conn.send(21, 2, {"timeout_ms": 1000, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "offset": 0}]}]})  # fmt: skip
        assert deleted.topics[0].partitions[0].error_code == TopicAuthorizationException.code
    # The super user passes the same checks.
    admin = ClientSecurity("SASL_PLAINTEXT", None, "PLAIN", "admin", USERS["admin"])
    with BrokerConnection("127.0.0.1", ports[controller], "acl-test", 10.0, security=admin) as conn:
        assert conn.send(35, 4, {"topics": None}).error_code == 0
        assert conn.send(50, 0, {"users": None}).error_code == 0


# -- inter-broker APIs, propagation -----------------------------------------------------------


@pytest.mark.timeout(120)
def test_inter_broker_requests_need_cluster_action(cluster: tuple[KafkapyCluster, dict[int, int]]) -> None:
    c, ports = cluster
    topic = _topic(ports, "ib")
    # User:ANONYMOUS on the PLAINTEXT listener: no ClusterAction.
    with BrokerConnection("127.0.0.1", c.brokers[0].port, "acl-test", 10.0) as conn:
        answer = conn.send(6, 8, {"controller_id": 0, "controller_epoch": 99, "broker_epoch": 0,
                                   "topic_states": [], "live_brokers": []})  # fmt: skip
        assert answer.error_code == ClusterAuthorizationException.code
        fetch = conn.send(1, 11, {"replica_id": 1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1000,
                                  "topics": [{"topic": topic, "partitions": [
                                      {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1000}]}]})  # fmt: skip
        assert fetch.responses[0].partitions[0].error_code == TopicAuthorizationException.code


@pytest.mark.timeout(180)
def test_acl_created_through_one_broker_applies_on_all_within_seconds(
    cluster: tuple[KafkapyCluster, dict[int, int]],
) -> None:
    _, ports = cluster
    topic = _topic(ports, "spread")
    security = ClientSecurity("SASL_PLAINTEXT", None, "PLAIN", "carol", USERS["carol"])

    def describe_code(broker: int) -> int:
        with BrokerConnection("127.0.0.1", ports[broker], "acl-test", 10.0, security=security) as conn:
            md = conn.send(3, 9, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
        return int(md.topics[0].error_code)

    assert {describe_code(b) for b in ports} == {TopicAuthorizationException.code}
    started = time.monotonic()
    _grant(ports, _allow(ResourceType.TOPIC, topic, "carol", AclOperation.DESCRIBE), only=0, wait=False)
    waits = {}
    for b in ports:
        assert _eventually(lambda b=b: describe_code(b) == 0, timeout_s=15), (
            f"broker {b} never applied the ACL"
        )
        waits[b] = time.monotonic() - started
    print(f"ACL applied on brokers after (s): { {b: round(w, 2) for b, w in waits.items()} }")
    # Typically 0.02 s; the bound leaves room for the admin client's start on a busy machine.
    assert max(waits.values()) < 10


@pytest.mark.timeout(120)
def test_kafka_python_client_is_refused_and_admitted(cluster: tuple[KafkapyCluster, dict[int, int]]) -> None:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KpTopicPartition
    from kafka.errors import TopicAuthorizationFailedError

    _, ports = cluster
    topic = _topic(ports, "kp")
    assert _produce(ports, "admin", topic, n=2) == [None, None]
    conf = {"bootstrap_servers": _bootstrap(ports), "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
            "sasl_plain_username": "dave", "sasl_plain_password": USERS["dave"]}  # fmt: skip
    consumer = KafkaConsumer(**conf, enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        tp = KpTopicPartition(topic, 0)
        with pytest.raises(TopicAuthorizationFailedError):
            consumer.end_offsets([tp])
    finally:
        consumer.close()
    _grant(ports, _allow(ResourceType.TOPIC, topic, "dave", AclOperation.READ))
    time.sleep(1)
    consumer = KafkaConsumer(**conf, enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        consumer.assign([tp])
        got: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(got) < 2 and time.monotonic() < deadline:
            for records in consumer.poll(500).values():
                got += [r.value for r in records]
        assert sorted(got) == [b"m0", b"m1"]
    finally:
        consumer.close()
