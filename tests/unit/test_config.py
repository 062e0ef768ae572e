"""KafkaConfig: Kafka's defaults, types, precedence rules and one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkapy.common.config_def import LONG_MAX, ConfigType, Password
from kafkapy.server.config import ConfigException, EndPoint, KafkaConfig, parse_zk_connect
from kafkapy.server.config_keys import BROKER_CONFIG

REPO = Path(__file__).resolve().parents[2]


def config(**props: str) -> KafkaConfig:
    base = {"zookeeper.connect": "localhost:2181"}
    base.update({k.replace("_", "."): v for k, v in props.items()})
    return KafkaConfig(base)


def error_for(props: dict[str, str]) -> str:
    with pytest.raises(ConfigException) as info:
        KafkaConfig({"zookeeper.connect": "localhost:2181", **props})
    message = str(info.value)
    assert "\n" not in message
    return message


def test_kafka_defaults() -> None:
    c = config()
    assert c.broker_id == -1
    assert c.num_network_threads == 3 and c.num_io_threads == 8
    assert c.socket_send_buffer_bytes == 102400
    assert c.socket_receive_buffer_bytes == -1  # kafkapy's: auto-tuned (Kafka: 102400)
    assert c.socket_request_max_bytes == 104857600
    assert c.queued_max_requests == 500
    assert c.connections_max_idle_ms == 600000
    assert c.num_partitions == 1 and c.default_replication_factor == 1
    assert c.auto_create_topics_enable is True and c.delete_topic_enable is True
    assert c.message_max_bytes == 1048588
    assert c.log_segment_bytes == 1073741824
    assert c.log_roll_ms == 168 * 3600 * 1000
    assert c.log_index_interval_bytes == 4096 and c.log_index_size_max_bytes == 10485760
    assert c.log_retention_ms == 168 * 3600 * 1000 and c.log_retention_bytes == -1
    assert c.log_retention_check_interval_ms == 300000
    assert c.log_flush_interval_messages == LONG_MAX
    assert c.log_flush_scheduler_interval_ms == LONG_MAX
    assert c.log_flush_offset_checkpoint_interval_ms == 60000
    assert c.log_flush_start_offset_checkpoint_interval_ms == 60000
    assert c.log_message_timestamp_type == "CreateTime"
    assert c.log_cleanup_policy == ["delete"]
    assert c.compression_type == "producer"
    assert c.zookeeper_session_timeout_ms == 18000
    assert c.min_insync_replicas == 1 and c.unclean_leader_election_enable is False
    assert c.replica_lag_time_max_ms == 30000 and c.replica_fetch_wait_max_ms == 500
    assert c.replica_fetch_max_bytes == 1048576 and c.replica_socket_timeout_ms == 30000
    assert c.num_replica_fetchers == 1
    assert c.offsets_topic_num_partitions == 50 and c.offsets_topic_replication_factor == 3
    assert c.offsets_retention_minutes == 10080 and c.offsets_commit_timeout_ms == 5000
    assert c.group_initial_rebalance_delay_ms == 3000
    assert c.group_min_session_timeout_ms == 6000 and c.group_max_session_timeout_ms == 1800000
    assert c.transaction_state_log_num_partitions == 50 and c.transaction_state_log_min_isr == 2
    assert c.controlled_shutdown_enable is True and c.controlled_shutdown_max_retries == 3
    assert c.controlled_shutdown_retry_backoff_ms == 5000 and c.controller_socket_timeout_ms == 30000
    assert c.auto_leader_rebalance_enable is True
    assert c.leader_imbalance_check_interval_seconds == 300 and c.leader_imbalance_per_broker_percentage == 10
    assert c.broker_rack is None and c.reserved_broker_max_id == 1000
    assert c.request_timeout_ms == 30000 and c.fetch_max_bytes == 57671680
    assert c.max_connections == 2**31 - 1
    assert c.kafkapy_zookeeper_embedded_enable is True
    assert c.log_dirs == ["/tmp/kafka-logs"]
    assert c.listeners == [EndPoint("PLAINTEXT", "PLAINTEXT", "", 9092)]


def test_every_default_passes_its_own_validator() -> None:
    # ConfigDef.define validates defaults; parsing an empty config must not raise either.
    assert len(BROKER_CONFIG.keys) > 100
    config()


def test_snake_case_attributes_match_get() -> None:
    c = config(num_partitions="7")
    assert c.num_partitions == c.get("num.partitions") == 7
    with pytest.raises(AttributeError):
        _ = c.no_such_setting
    with pytest.raises(KeyError):
        c.get("no.such.setting")


def test_values_are_typed_and_trimmed() -> None:
    c = config(num_partitions=" 3 ", auto_create_topics_enable="FALSE", log_cleanup_policy="compact, delete")
    assert c.num_partitions == 3
    assert c.auto_create_topics_enable is False
    assert c.log_cleanup_policy == ["compact", "delete"]
    assert isinstance(c.log_retention_bytes, int)
    assert c.log_cleaner_min_cleanable_ratio == 0.5


def test_passwords_are_hidden_when_printed() -> None:
    c = config(ssl_keystore_password="s3cret")
    assert isinstance(c.ssl_keystore_password, Password)
    assert c.ssl_keystore_password.value == "s3cret"
    assert "s3cret" not in c.describe() and "[hidden]" in c.describe()


@pytest.mark.parametrize(
    ("props", "message"),
    [
        (
            {"num.partitions": "abc"},
            "Invalid value abc for configuration num.partitions: Not a number of type INT",
        ),
        (
            {"num.partitions": "0"},
            "Invalid value 0 for configuration num.partitions: Value must be at least 1",
        ),
        (
            {"num.partitions": "3000000000"},
            "Invalid value 3000000000 for configuration num.partitions: Not a number of type INT",
        ),
        (
            {"log.retention.bytes": "1.5"},
            "Invalid value 1.5 for configuration log.retention.bytes: Not a number of type LONG",
        ),
        (
            {"offsets.topic.replication.factor": "40000"},
            "Invalid value 40000 for configuration offsets.topic.replication.factor: Not a number of type SHORT",
        ),
        (
            {"delete.topic.enable": "yes"},
            "Invalid value yes for configuration delete.topic.enable: Expected value to be either true or false",
        ),
        (
            {"log.cleaner.min.cleanable.ratio": "x"},
            "Invalid value x for configuration log.cleaner.min.cleanable.ratio: Not a number of type DOUBLE",
        ),
        (
            {"log.cleaner.min.cleanable.ratio": "1.5"},
            "Invalid value 1.5 for configuration log.cleaner.min.cleanable.ratio: Value must be no more than 1",
        ),
        (
            {"compression.type": "brotli"},
            "Invalid value brotli for configuration compression.type: String must be one of: "
            "uncompressed, zstd, lz4, snappy, gzip, producer",
        ),
        (
            {"log.message.timestamp.type": "Now"},
            "Invalid value Now for configuration log.message.timestamp.type: String must be one of: CreateTime, LogAppendTime",
        ),
        (
            {"log.cleanup.policy": "delete,shred"},
            "Invalid value shred for configuration log.cleanup.policy: String must be one of: compact, delete",
        ),
        (
            {"inter.broker.protocol.version": "banana"},
            "Invalid value banana for configuration inter.broker.protocol.version: Not a Kafka version",
        ),
    ],
)
def test_bad_values_fail_with_one_line_naming_key_value_and_allowed(
    props: dict[str, str], message: str
) -> None:
    assert error_for(props).startswith(message)


def test_zookeeper_connect_is_required() -> None:
    with pytest.raises(
        ConfigException,
        match='Missing required configuration "zookeeper.connect" which has no default value.',
    ):
        KafkaConfig({})


def test_unknown_keys_are_kept_and_reported() -> None:
    c = config(**{"my_custom_key": "1", "broker_id": "2"})
    assert c.unknown_keys == ["my.custom.key"]
    assert c.originals["my.custom.key"] == "1"


def test_retention_precedence_is_ms_then_minutes_then_hours() -> None:
    assert config(log_retention_hours="1").log_retention_ms == 3600000
    assert config(log_retention_hours="1", log_retention_minutes="2").log_retention_ms == 120000
    assert (
        config(log_retention_hours="1", log_retention_minutes="2", log_retention_ms="5").log_retention_ms == 5
    )
    assert config(log_retention_ms="-1").log_retention_ms == -1
    assert config(log_retention_hours="-5").log_retention_ms == -1
    assert config().get("log.retention.ms") is None


def test_retention_of_zero_is_rejected() -> None:
    assert "log.retention.ms must be unlimited (-1) or, greater than or equal to 1" in error_for(
        {"log.retention.ms": "0"}
    )


def test_roll_and_flush_fall_back_like_kafka() -> None:
    assert config(log_roll_hours="2").log_roll_ms == 7200000
    assert config(log_roll_hours="2", log_roll_ms="10").log_roll_ms == 10
    assert config(log_flush_scheduler_interval_ms="3000").log_flush_interval_ms == 3000
    assert (
        config(log_flush_scheduler_interval_ms="3000", log_flush_interval_ms="7").log_flush_interval_ms == 7
    )


def test_log_dirs_wins_over_log_dir() -> None:
    assert config(log_dir="/a").log_dirs == ["/a"]
    assert config(log_dir="/a", log_dirs="/b, /c").log_dirs == ["/b", "/c"]
    assert config(log_dir="/a,/d").log_dirs == ["/a", "/d"]
    assert "At least one log directory" in error_for({"log.dirs": " , "})


def test_embedded_zookeeper_data_dir_sits_beside_the_log_dirs() -> None:
    assert (
        config(log_dirs="/data/kafka/logs,/x").kafkapy_zookeeper_embedded_data_dir
        == "/data/kafka/zookeeper-data"
    )
    assert config(kafkapy_zookeeper_embedded_data_dir="/zk").kafkapy_zookeeper_embedded_data_dir == "/zk"


def test_embedded_zookeeper_only_for_loopback_connect_strings() -> None:
    assert config(zookeeper_connect="localhost:2181/kafka").embedded_zookeeper_candidate == (
        "localhost",
        2181,
    )
    assert config(zookeeper_connect="127.0.0.1:2999").embedded_zookeeper_candidate == ("127.0.0.1", 2999)
    assert config(zookeeper_connect="zk1.example:2181").embedded_zookeeper_candidate is None
    disabled = config(zookeeper_connect="localhost:2181", kafkapy_zookeeper_embedded_enable="false")
    assert disabled.embedded_zookeeper_candidate is None


def test_zookeeper_connect_splits_hosts_and_chroot() -> None:
    c = config(zookeeper_connect="zk1:2181,zk2:2182,zk3/kafka/prod")
    assert c.zookeeper_hosts == "zk1:2181,zk2:2182,zk3"
    assert c.zookeeper_chroot == "/kafka/prod"
    assert c.zookeeper.addresses == (("zk1", 2181), ("zk2", 2182), ("zk3", 2181))
    assert parse_zk_connect("[::1]:2182").addresses == (("::1", 2182),)
    assert parse_zk_connect("h:1/").chroot is None
    assert "Invalid chroot path" in error_for({"zookeeper.connect": "h:1/kafka/"})


def test_zookeeper_connection_timeout_defaults_to_session_timeout() -> None:
    assert config(zookeeper_session_timeout_ms="9000").zookeeper_connection_timeout_ms == 9000
    assert config(zookeeper_connection_timeout_ms="100").zookeeper_connection_timeout_ms == 100


def test_listeners_parse_to_endpoints() -> None:
    c = config(
        listeners="internal://10.0.0.1:9093,EXTERNAL://:9092,V6://[::1]:9094",
        listener_security_protocol_map="INTERNAL:PLAINTEXT,EXTERNAL:SSL,V6:PLAINTEXT",
        inter_broker_listener_name="INTERNAL",
    )
    assert c.listeners == [
        EndPoint("INTERNAL", "PLAINTEXT", "10.0.0.1", 9093),
        EndPoint("EXTERNAL", "SSL", "", 9092),
        EndPoint("V6", "PLAINTEXT", "::1", 9094),
    ]
    name, protocol, host, port = c.listeners[0]
    assert (name, protocol, host, port) == ("INTERNAL", "PLAINTEXT", "10.0.0.1", 9093)
    assert c.inter_broker_listener_name == "INTERNAL"


def test_advertised_endpoints_fill_in_the_host_name() -> None:
    c = config(listeners="PLAINTEXT://:9092")
    assert c.advertised_endpoints("broker1.example") == [
        EndPoint("PLAINTEXT", "PLAINTEXT", "broker1.example", 9092)
    ]
    c = config(listeners="PLAINTEXT://0.0.0.0:9092", advertised_listeners="PLAINTEXT://public:19092")
    assert c.advertised_endpoints("ignored") == [EndPoint("PLAINTEXT", "PLAINTEXT", "public", 19092)]


@pytest.mark.parametrize(
    ("props", "fragment"),
    [
        ({"listeners": "PLAINTEXT:9092"}, "Unable to parse PLAINTEXT:9092 to a broker endpoint"),
        ({"listeners": "FOO://:9092"}, "No security protocol defined for listener FOO"),
        ({"listeners": "PLAINTEXT://:9092,PLAINTEXT://:9093"}, "Each listener must have a different name"),
        (
            {"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"},
            "cannot use the nonroutable meta-address 0.0.0.0",
        ),
        (
            {"listeners": "A://:1", "listener.security.protocol.map": "A:PLAINTEXT"},
            "inter.broker.listener.name must be a listener name defined in advertised.listeners",
        ),
        (
            {"broker.id": "1001"},
            "broker.id must be greater than or equal to -1 and not greater than reserved.broker.max.id",
        ),
        ({"broker.id.generation.enable": "false"}, "broker.id must be greater than or equal to 0"),
        (
            {"replica.fetch.wait.max.ms": "40000"},
            "replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms",
        ),
        ({"offsets.commit.required.acks": "5"}, "offsets.commit.required.acks must be greater or equal -1"),
    ],
)
def test_cross_key_checks(props: dict[str, str], fragment: str) -> None:
    assert fragment in error_for(props)


def test_log_config_props_use_topic_level_names() -> None:
    c = config(
        log_segment_bytes="1024",
        log_roll_hours="1",
        log_retention_minutes="10",
        log_cleanup_policy="compact,delete",
        log_flush_interval_messages="5",
        message_max_bytes="2000",
        unclean_leader_election_enable="true",
        min_insync_replicas="2",
        compression_type="lz4",
        log_message_timestamp_type="LogAppendTime",
        log_index_interval_bytes="100",
        log_index_size_max_bytes="4096",
    )
    props = c.log_config_props()
    assert props["segment.bytes"] == "1024"
    assert props["segment.ms"] == "3600000"
    assert props["segment.index.bytes"] == "4096"
    assert props["index.interval.bytes"] == "100"
    assert props["retention.ms"] == "600000"
    assert props["retention.bytes"] == "-1"
    assert props["max.message.bytes"] == "2000"
    assert props["message.timestamp.type"] == "LogAppendTime"
    assert props["cleanup.policy"] == "compact,delete"
    assert props["flush.messages"] == "5"
    assert props["flush.ms"] == str(LONG_MAX)
    assert props["min.insync.replicas"] == "2"
    assert props["unclean.leader.election.enable"] == "true"
    assert props["compression.type"] == "lz4"
    assert all(isinstance(v, str) for v in props.values())


def test_from_file_applies_overrides_last(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("zookeeper.connect=localhost:2181\nbroker.id=1\nnum.partitions=2\n")
    c = KafkaConfig.from_file(path, ["broker.id=5", "log.dirs=/x=y"])
    assert c.broker_id == 5 and c.num_partitions == 2 and c.log_dirs == ["/x=y"]
    with pytest.raises(ConfigException, match="expected key=value"):
        KafkaConfig.from_file(path, ["broker.id"])


def test_shipped_config_files_load(tmp_path: Path) -> None:
    c = KafkaConfig.from_file(REPO / "config" / "server.properties")
    assert c.unknown_keys == []
    assert c.broker_id == 0
    assert c.log_dirs == ["/tmp/kafkapy-logs"]
    assert c.zookeeper_hosts == "localhost:2181"
    assert c.offsets_topic_replication_factor == 1


def test_every_key_has_a_type_importance_and_doc() -> None:
    for key in BROKER_CONFIG.keys.values():
        assert isinstance(key.type, ConfigType)
        assert key.doc, key.name


def test_server_start_reports_a_bad_value_on_one_line_and_exits_1(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kafkapy.tools.server_start import main

    path = tmp_path / "server.properties"
    path.write_text("zookeeper.connect=localhost:2181\n")
    result = CliRunner().invoke(main, ["-daemon", str(path), "--override", "num.partitions=abc"])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        "kafkapy-server-start: Invalid value abc for configuration num.partitions: Not a number of type INT"
    ]
