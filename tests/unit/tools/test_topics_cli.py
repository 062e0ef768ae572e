"""kafkapy-topics end to end without a cluster: click parsing, one-line errors and exit codes,
and the --bootstrap-server service's output over a fake admin client."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest
from click.testing import CliRunner

from kafkapy.client.admin import ConfigEntry, NewTopic, PartitionInfo, TopicInfo
from kafkapy.protocol.errors import TopicExistsException
from kafkapy.tools.topic_command.admin_service import AdminClientTopicService
from kafkapy.tools.topic_command.options import TopicCommandOptions
from kafkapy.tools.topic_command.service import Printer, TopicService
from kafkapy.tools.topics import execute, kafka_topics, main, options_from_click


class FakeAdmin:
    """The AdminClient surface AdminClientTopicService uses, over an in-memory cluster."""

    def __init__(self) -> None:
        self.topics: dict[str, TopicInfo] = {}
        self.configs: dict[str, list[ConfigEntry]] = {}
        self.created: list[NewTopic] = []
        self.partition_requests: list[Mapping[str, tuple[int, Sequence[Sequence[int]] | None]]] = []
        self.deleted: list[list[str]] = []
        self.closed = False

    def add(self, name: str, partitions: int = 1, internal: bool = False, **configs: str) -> None:
        parts = tuple(PartitionInfo(p, 0, (0,), (0,)) for p in range(partitions))
        self.topics[name] = TopicInfo(name, "xb2sfmUUThif_6KZDJh0Wg", internal, parts)
        self.configs[name] = [ConfigEntry(k.replace("_", "."), v, False) for k, v in configs.items()] + [
            ConfigEntry("min.insync.replicas", "1", True)
        ]

    def list_topics(self, include_internal: bool = False) -> list[str]:
        return sorted(t for t, i in self.topics.items() if include_internal or not i.is_internal)

    def live_brokers(self) -> set[int]:
        return {0}

    def describe_topics(self, names: Sequence[str]) -> dict[str, TopicInfo]:
        return {n: self.topics[n] for n in names}

    def describe_configs(self, names: Sequence[str]) -> dict[str, list[ConfigEntry]]:
        return {n: self.configs[n] for n in names}

    def create_topic(self, topic: NewTopic) -> None:
        if topic.name in self.topics:
            raise TopicExistsException(f"Topic '{topic.name}' already exists.")
        self.created.append(topic)

    def create_partitions(self, counts: Mapping[str, tuple[int, Sequence[Sequence[int]] | None]]) -> None:
        self.partition_requests.append(counts)

    def delete_topics(self, names: Sequence[str]) -> None:
        self.deleted.append(list(names))

    def close(self) -> None:
        self.closed = True


def run(admin: FakeAdmin, *args: str) -> tuple[int, list[str], list[str]]:
    """Parse `args` with the real click command, run them against `admin`."""
    ctx = kafka_topics.make_context("kafkapy-topics", ["--bootstrap-server", "127.0.0.1:1", *args])
    opts = options_from_click(ctx, ctx.params)
    out: list[str] = []
    err: list[str] = []

    def opener(o: TopicCommandOptions, printer: Printer) -> TopicService:
        return AdminClientTopicService(admin, printer)  # type: ignore[arg-type]

    return execute(opts, out.append, err.append, opener), out, err


# -- usage errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--list"], "Only one of --bootstrap-server or --zookeeper must be specified"),
        (["--zookeeper", "z:1", "--list", "--delete"], "Command must include exactly one action"),
        (["--zookeeper", "z:1", "--create", "--topic", "t"], 'Missing required argument "[partitions]"'),
        (["--bootstrap-server", "b:1", "--alter", "--topic", "t"], 'Missing required argument "[partitions]"'),
        (["--zookeeper", "z:1", "--create", "--topic", "t", "--partitions", "two"],
         "Cannot parse argument 'two' of option partitions"),
    ],
)  # fmt: skip
def test_usage_errors_are_one_stderr_line_and_exit_1(args: list[str], message: str) -> None:
    result = CliRunner().invoke(kafka_topics, args)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith(message)
    assert result.stderr.count("\n") == 1


def test_unknown_option_is_one_line_too(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["--zookeeper", "z:1", "--list", "--no-such-option"])
    assert e.value.code == 1
    err = capsys.readouterr().err
    assert err == "No such option '--no-such-option'.\n"


def test_no_arguments_prints_purpose_and_usage_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main([])
    assert e.value.code == 1
    assert capsys.readouterr().err.startswith("Create, delete, describe, or change a topic.\n")


def test_help_exits_0() -> None:
    result = CliRunner().invoke(kafka_topics, ["--help"])
    assert result.exit_code == 0
    assert "--replica-assignment" in result.stdout


def test_a_failing_action_prints_kafkas_error_line() -> None:
    def opener(o: TopicCommandOptions, printer: Printer) -> TopicService:
        raise OSError("connection refused")

    err: list[str] = []
    opts = TopicCommandOptions(given=frozenset({"list", "bootstrap-server"}), bootstrap_server="b:1")
    assert execute(opts, print, err.append, opener) == 1
    assert err == ["Error while executing topic command : connection refused"]


# -- --bootstrap-server output --------------------------------------------------------------------


def test_create_prints_created_topic() -> None:
    admin = FakeAdmin()
    code, out, err = run(admin, "--create", "--topic", "t", "--partitions", "3", "--config", "retention.ms=5")
    assert (code, out, err) == (0, ["Created topic t."], [])
    assert admin.created == [NewTopic("t", 3, -1, None, {"retention.ms": "5"})]
    assert admin.closed


def test_create_warns_about_period_and_underscore_names() -> None:
    code, out, _ = run(FakeAdmin(), "--create", "--topic", "a.b")
    assert code == 0
    assert out[0].startswith(
        "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore"
    )
    assert out[1] == "Created topic a.b."


def test_create_existing_topic_fails_unless_if_not_exists() -> None:
    admin = FakeAdmin()
    admin.add("t")
    assert run(admin, "--create", "--topic", "t") == (
        1,
        [],
        ["Error while executing topic command : Topic 't' already exists."],
    )
    assert run(admin, "--create", "--topic", "t", "--if-not-exists") == (0, [], [])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--replication-factor", "0"], "The replication factor must be between 1 and 32767 inclusive"),
        (["--replication-factor", "40000"], "The replication factor must be between 1 and 32767 inclusive"),
        (["--partitions", "0"], "The partitions must be greater than 0"),
        (["--config", "nope=1"], "Unknown topic config name: nope"),
        (["--replica-assignment", "0:0"], "Partition replica lists may not contain duplicate entries: 0"),
    ],
)
def test_create_argument_errors(args: list[str], message: str) -> None:
    assert run(FakeAdmin(), "--create", "--topic", "t", *args) == (
        1,
        [],
        [f"Error while executing topic command : {message}"],
    )


def test_list_prints_one_name_per_line_and_an_empty_line_for_none() -> None:
    admin = FakeAdmin()
    assert run(admin, "--list") == (0, [""], [])
    admin.add("b")
    admin.add("a")
    admin.add("__consumer_offsets", internal=True)
    assert run(admin, "--list") == (0, ["__consumer_offsets\na\nb"], [])
    assert run(admin, "--list", "--exclude-internal") == (0, ["a\nb"], [])
    assert run(admin, "--list", "--topic", "b|c") == (0, ["b"], [])


def test_describe_prints_topic_and_partition_lines_with_overrides_only() -> None:
    admin = FakeAdmin()
    admin.add("t", partitions=2, segment_bytes="1000")
    code, out, _ = run(admin, "--describe", "--topic", "t")
    assert code == 0
    assert out == [
        "Topic: t\tTopicId: xb2sfmUUThif_6KZDJh0Wg\tPartitionCount: 2\tReplicationFactor: 1\tConfigs: segment.bytes=1000",
        "\tTopic: t\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0",
        "\tTopic: t\tPartition: 1\tLeader: 0\tReplicas: 0\tIsr: 0",
    ]


def test_describe_or_delete_of_a_missing_topic() -> None:
    admin = FakeAdmin()
    for action in ("--describe", "--delete"):
        assert run(admin, action, "--topic", "x") == (
            1,
            [],
            ["Error while executing topic command : Topic 'x' does not exist as expected"],
        )
        assert run(admin, action, "--topic", "x", "--if-exists") == (0, [], [])
    assert admin.deleted == []


def test_delete_prints_nothing() -> None:
    admin = FakeAdmin()
    admin.add("t1")
    admin.add("t2")
    assert run(admin, "--delete", "--topic", "t.*") == (0, [], [])
    assert admin.deleted == [["t1", "t2"]]


def test_alter_sends_only_the_new_partitions_of_the_assignment() -> None:
    admin = FakeAdmin()
    admin.add("t", partitions=2)
    code, out, _ = run(
        admin, "--alter", "--topic", "t", "--partitions", "4", "--replica-assignment", "0,0,0,0"
    )
    assert (code, out) == (0, [])
    assert admin.partition_requests == [{"t": (4, [[0], [0]])}]
