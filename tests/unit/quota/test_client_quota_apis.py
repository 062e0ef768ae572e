"""DescribeClientQuotas / AlterClientQuotas rules without a broker (Kafka's ZkAdminManager):
filters, entity validation, how values are stored; kafkapy-configs' user+client entities and
Kafka's number formatting."""

from __future__ import annotations

import pytest

from kafkapy.protocol.errors import InvalidRequestException
from kafkapy.server.apis.client_quotas import (
    MATCH_DEFAULT,
    MATCH_EXACT,
    MATCH_SPECIFIED,
    FilterComponent,
    apply_ops,
    describe_entries,
    entity_of,
    matches,
)
from kafkapy.server.quota.quota_entity import DEFAULT, QuotaEntity
from kafkapy.tools.configs_cmd.options import DEFAULT_ENTITY, Entity, check_args
from kafkapy.tools.configs_cmd.quota_actions import java_double
from kafkapy.tools.configs_cmd.quota_options import name_order, ordered_names

ALICE_APP = QuotaEntity("alice", "app")
ALICE = QuotaEntity("alice", None)
DEFAULT_CLIENT = QuotaEntity(None, DEFAULT)


@pytest.mark.timeout(5)
def test_filters_match_exact_default_and_any_specified_names_and_strict_excludes_other_types() -> None:
    user = FilterComponent("user", MATCH_EXACT, "alice")
    assert matches(ALICE, [user], strict=False) and matches(ALICE_APP, [user], strict=False)
    assert matches(ALICE, [user], strict=True) and not matches(ALICE_APP, [user], strict=True)
    assert matches(DEFAULT_CLIENT, [FilterComponent("client-id", MATCH_DEFAULT, None)], strict=True)
    assert not matches(DEFAULT_CLIENT, [FilterComponent("client-id", MATCH_SPECIFIED, None)], strict=True)
    assert matches(ALICE_APP, [FilterComponent("client-id", MATCH_SPECIFIED, None)], strict=False)
    assert matches(ALICE, [], strict=False) and not matches(ALICE, [], strict=True)


@pytest.mark.timeout(5)
def test_describe_answers_users_before_their_clients_and_refuses_bad_filters() -> None:
    quotas = {ALICE_APP: {"producer_byte_rate": 1.0}, ALICE: {"consumer_byte_rate": 2.0}}
    entries = describe_entries(quotas, [FilterComponent("user", MATCH_EXACT, "alice")], strict=False)
    assert [e.to_dict()["entity"] for e in entries] == [
        [{"entity_type": "user", "entity_name": "alice"}],
        [{"entity_type": "user", "entity_name": "alice"}, {"entity_type": "client-id", "entity_name": "app"}],
    ]
    for bad in (
        [FilterComponent("user", 0, "a"), FilterComponent("user", 0, "b")],
        [FilterComponent("group", 2, None)],
        [FilterComponent("user", 7, None)],
    ):
        with pytest.raises(InvalidRequestException):
            describe_entries(quotas, bad, strict=False)


@pytest.mark.timeout(5)
def test_alter_validates_entities_and_keys_and_stores_longs_as_integers_keeping_scram() -> None:
    assert entity_of([("user", None), ("client-id", "c")]) == QuotaEntity(DEFAULT, "c")
    for bad in ([], [("user", "a"), ("user", "b")], [("group", "g")], [("client-id", "")]):
        with pytest.raises(InvalidRequestException):
            entity_of(bad)
    scram = {"SCRAM-SHA-256": "salt=abc,stored_key=...,server_key=...,iterations=4096"}
    new = apply_ops(scram, [("producer_byte_rate", 1048576.0, False), ("request_percentage", 50.0, False)])
    assert new == {**scram, "producer_byte_rate": "1048576", "request_percentage": "50.0"}
    assert apply_ops(new, [("producer_byte_rate", 0.0, True), ("request_percentage", 0.0, True)]) == scram
    with pytest.raises(InvalidRequestException, match="Invalid configuration key"):
        apply_ops({}, [("retention.ms", 1.0, False)])
    with pytest.raises(InvalidRequestException, match="must be a Long value"):
        apply_ops({}, [("consumer_byte_rate", 0.5, False)])


@pytest.mark.timeout(5)
def test_configs_pairs_a_user_and_a_client_in_command_line_order() -> None:
    assert ordered_names(["u"], True, [False, True]) == [DEFAULT_ENTITY, "u"]
    assert ordered_names(["u"], True, None) == ["u", DEFAULT_ENTITY]
    assert name_order(
        [
            "--entity-type",
            "users",
            "--entity-default",
            "--entity-type",
            "clients",
            "--entity-name",
            "--entity-default",
        ]
    ) == [False, True]
    options = check_args(
        True,
        False,
        "b:9092",
        None,
        ["clients", "users"],
        ["c", "u"],
        False,
        "producer_byte_rate=1",
        (),
        False,
    )
    assert options.entity == Entity("users", "u", Entity("clients", "c"))
    assert str(options.entity) == "user-principal 'u', client-id 'c'"
    assert options.first_entity == Entity("clients", "c")


@pytest.mark.timeout(5)
def test_quota_values_print_as_java_doubles() -> None:
    assert java_double(1048576.0) == "1048576.0"
    assert java_double(50.0) == "50.0"
    assert java_double(1.048576e7) == "1.048576E7"
    assert java_double(1e7) == "1.0E7"
    assert java_double(9.223372036854776e18) == "9.223372036854776E18"
    assert java_double(0.0001) == "1.0E-4"


@pytest.mark.timeout(5)
def test_scram_and_quota_configs_are_told_apart_as_kafkas_tool_does() -> None:
    from kafkapy.tools.configs_cmd.options import CommandError, Options
    from kafkapy.tools.configs_cmd.quota_actions import _check_names

    def opts(entity: Entity, add: dict[str, str], delete: list[str] | None = None) -> Options:
        return Options("alter", entity, False, add, delete or [], False, entity)

    alice = Entity("users", "alice")
    assert _check_names(opts(alice, {"SCRAM-SHA-256": "password=x"})) == (
        {},
        [],
        {"SCRAM-SHA-256": "password=x"},
        [],
    )
    for options, message in (
        (
            opts(alice, {"SCRAM-SHA-256": "password=x", "producer_byte_rate": "1"}),
            "Cannot alter both quota and SCRAM credential configs simultaneously for 'users' using --bootstrap-server.",
        ),
        (
            opts(Entity("users", DEFAULT_ENTITY), {"SCRAM-SHA-512": "password=x"}),
            "The use of --entity-default or --user-defaults is not allowed with User SCRAM Credentials using "
            "--bootstrap-server.",
        ),
        (
            opts(alice, {"retention.ms": "1"}),
            "Only quota and SCRAM credential configs can be added for 'users' using "
            "--bootstrap-server. Unexpected config names: Set(retention.ms)",
        ),
        (
            opts(Entity("clients", "c"), {"SCRAM-SHA-256": "password=x"}),
            "Only quota configs can be added for "
            "'clients' using --bootstrap-server. Unexpected config names: Set(SCRAM-SHA-256)",
        ),
    ):
        with pytest.raises(CommandError) as e:
            _check_names(options)
        assert str(e.value) == message
