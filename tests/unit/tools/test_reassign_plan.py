"""kafkapy-reassign-partitions' pure parts: Kafka's JSON in and out, its refusals and messages,
--generate's placement, the --verify status lines and the option checks."""

import json

import pytest

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.tools.reassign_cmd.reassignment_json import (
    AdminCommandFailedError,
    PartitionState,
    calculate_assignment,
    check_racks,
    current_assignment_lines,
    format_generate,
    format_reassignment_json,
    parse_execute_args,
    parse_generate_args,
    parse_reassignment_json,
    started_line,
    status_lines,
)
from kafkapy.tools.reassign_partitions import UsageError, check_options
from kafkapy.zk.errors import AdminOperationError

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


def plan(*entries):
    return json.dumps(
        {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": r} for t, p, r in entries]}
    )


def test_json_out_is_kafkas_compact_sorted_form():
    assert format_reassignment_json({T1: [2, 1], T0: [1, 2]}) == (
        '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]},'
        '{"topic":"t","partition":1,"replicas":[2,1],"log_dirs":["any","any"]}]}'
    )


def test_json_round_trips_and_keeps_file_order_and_log_dirs():
    text = json.dumps(
        {
            "version": 1,
            "partitions": [
                {"topic": "t", "partition": 1, "replicas": [2, 1], "log_dirs": ["any", "/d"]},
                {"topic": "t", "partition": 0, "replicas": [1, 2]},
            ],
        }
    )
    parts, dirs = parse_reassignment_json(text)
    assert parts == [(T1, [2, 1]), (T0, [1, 2])]
    assert dirs == {(T1, 1): "/d"}
    assert parse_execute_args(format_reassignment_json({T0: [1, 2]}))[0] == {T0: [1, 2]}


@pytest.mark.parametrize(
    "text, message",
    [
        (plan(), "Partition reassignment list cannot be empty"),
        (plan(("t", 0, [])), "Partition replica list cannot be empty"),
        (
            plan(("t", 0, [1]), ("t", 0, [2])),
            "Partition reassignment contains duplicate topic partitions: t-0",
        ),
        (
            plan(("t", 0, [1, 1, 2])),
            "Partition replica lists may not contain duplicate entries: t-0 contains multiple entries for 1",
        ),
        (
            json.dumps(
                {
                    "version": 1,
                    "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any"]}],
                }
            ),
            "Size of replicas list List(1, 2) is different from size of log dirs list List(any) for partition t-0",
        ),
    ],
)
def test_execute_refuses_bad_plans_with_kafkas_messages(text, message):
    with pytest.raises(AdminCommandFailedError) as e:
        parse_execute_args(text)
    assert str(e.value) == message


@pytest.mark.parametrize("text", ["{not json", "[1]", '{"version": 2, "partitions": []}'])
def test_malformed_json_is_an_error(text):
    with pytest.raises(AdminOperationError):
        parse_execute_args(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"partitions": [{"topic": "t", "partition": "x", "replicas": [1]}]}',
            'Expected `Int` value, received "x"',
        ),
        ('{"partitions": [{"topic": "t", "replicas": [1]}]}', "No such field exists: `partition`"),
        (
            '{"partitions": [{"topic": 7, "partition": 0, "replicas": [1]}]}',
            "Expected `String` value, received 7",
        ),
        ('{"partitions": {"topic": "t"}}', 'Expected JSON array, received {"topic":"t"}'),
        ('{"version": "1", "partitions": []}', 'Expected `Int` value, received "1"'),
    ],
)
def test_badly_typed_json_gets_kafkas_decode_message(text, message):
    from kafkapy.tools.kafka_json import JsonMappingError

    with pytest.raises(JsonMappingError) as e:
        parse_execute_args(text)
    assert str(e.value) == message


def test_generate_args_refuse_duplicates():
    topics = json.dumps({"version": 1, "topics": [{"topic": "a"}, {"topic": "b"}]})
    assert parse_generate_args(topics, "1,2,3") == ([1, 2, 3], ["a", "b"])
    with pytest.raises(AdminCommandFailedError, match="^Broker list contains duplicate entries: 2$"):
        parse_generate_args(topics, "1,2,2")
    dup = json.dumps({"topics": [{"topic": "a"}, {"topic": "a"}]})
    with pytest.raises(
        AdminCommandFailedError, match="^List of topics to reassign contains duplicate entries: a$"
    ):
        parse_generate_args(dup, "1,2")


def test_generate_places_each_topic_over_the_brokers_with_its_replication_factor():
    current = {TopicPartition("a", p): [0, 1] for p in range(4)} | {TopicPartition("b", 0): [0]}
    proposed = calculate_assignment(current, dict.fromkeys([3, 1, 2]), fixed_start_index=0)
    assert proposed[TopicPartition("a", 0)] == [1, 2]
    assert {len(r) for tp, r in proposed.items() if tp.topic == "a"} == {2}
    assert all(set(r) <= {1, 2, 3} and len(set(r)) == len(r) for r in proposed.values())
    # Leaders rotate over the brokers.
    assert {proposed[TopicPartition("a", p)][0] for p in range(3)} == {1, 2, 3}
    assert proposed[TopicPartition("b", 0)] in ([1], [2], [3])
    lines = format_generate(current, proposed)
    assert (
        lines[0] == "Current partition replica assignment"
        and lines[3] == "Proposed partition reassignment configuration"
    )


def test_racks_need_disable_rack_aware():
    assert check_racks({1: None, 2: None}, rack_aware=True) == {1: None, 2: None}
    assert check_racks({1: "a", 2: None}, rack_aware=False) == {1: None, 2: None}
    with pytest.raises(AdminOperationError, match="^Not all brokers have rack information"):
        check_racks({1: "a", 2: None}, rack_aware=True)


def test_generate_is_rack_aware_unless_disabled():
    current = {TopicPartition("a", p): [0, 1] for p in range(6)}
    racks = {1: "x", 2: "x", 3: "y", 4: "y"}
    aware = calculate_assignment(current, check_racks(racks, rack_aware=True))
    assert all({racks[b] for b in r} == {"x", "y"} for r in aware.values())
    unaware = calculate_assignment(current, check_racks(racks, rack_aware=False), fixed_start_index=0)
    assert unaware[TopicPartition("a", 0)] == [1, 2]  # same rack: placement ignored the racks


def test_status_lines_are_kafkas():
    states = {
        T1: PartitionState((1, 2, 0), (1, 2), False),
        T0: PartitionState((1, 2), (1, 2), True),
        TopicPartition("t", 2): PartitionState((0, 1), (1, 2), True),
    }
    assert status_lines(states) == [
        "Status of partition reassignment:",
        "Reassignment of partition t-0 is complete.",
        "Reassignment of partition t-1 is still in progress.",
        "There is no active reassignment of partition t-2, but replica set is 0,1 rather than 1,2.",
    ]


def test_execute_lines_are_kafkas():
    assert started_line([T1, T0]) == "Successfully started partition reassignments for t-0,t-1"
    assert started_line([T0]) == "Successfully started partition reassignment for t-0"
    lines = current_assignment_lines({T0: [1, 2]}, {T0: [0, 1], T1: [0, 1]})
    assert lines[0] == "Current partition replica assignment" and lines[1] == ""
    assert lines[2] == format_reassignment_json({T0: [0, 1]})
    assert lines[4] == "Save this to use as the --reassignment-json-file option during rollback"


def options(**given):
    base = dict.fromkeys(
        [
            "generate",
            "execute",
            "verify",
            "cancel",
            "list",
            "additional",
            "disable_rack_aware",
            "preserve_throttles",
        ],
        False,
    )
    base.update(
        dict.fromkeys(
            [
                "bootstrap_server",
                "zookeeper",
                "reassignment_json_file",
                "topics_to_move_json_file",
                "broker_list",
                "throttle",
                "replica_alter_log_dirs_throttle",
                "timeout",
            ]
        )
    )
    base.update(given)
    return base


@pytest.mark.parametrize(
    "given, message",
    [
        (
            dict(bootstrap_server="b"),
            "Command must include exactly one action: --generate, --execute, --verify, --cancel, --list",
        ),
        (
            dict(execute=True, verify=True, bootstrap_server="b"),
            "Command must include exactly one action: --generate, --execute, --verify, --cancel, --list",
        ),
        (dict(execute=True, reassignment_json_file="f"), "Please specify --bootstrap-server"),
        (dict(execute=True, bootstrap_server="b"), 'Missing required argument "[reassignment-json-file]"'),
        (
            dict(verify=True, bootstrap_server="b", reassignment_json_file="f", throttle=5),
            'Option "[throttle]" can\'t be used with action "[verify]"',
        ),
        (
            dict(execute=True, zookeeper="z", reassignment_json_file="f", additional=True),
            'You must specify --bootstrap-server when using "[additional]"',
        ),
    ],
)
def test_option_checks_are_kafkas(given, message):
    with pytest.raises(UsageError) as e:
        check_options(options(**given))
    assert str(e.value) == message


def test_option_checks_pick_the_action():
    assert (
        check_options(options(execute=True, zookeeper="z", reassignment_json_file="f", throttle=10))
        == "execute"
    )
    assert check_options(options(list=True, bootstrap_server="b")) == "list"
