"""kafkapy-configs' command-line rules: Kafka 2.8's --add-config syntax and checkArgs messages."""

from __future__ import annotations

import pytest

from kafkapy.tools.configs_cmd.options import (
    DEFAULT_ENTITY,
    CommandError,
    Entity,
    check_args,
    parse_configs_to_add,
    parse_configs_to_delete,
    resolve_entity,
)

BOOT = "127.0.0.1:9092"


def test_add_config_splits_on_commas_outside_brackets_and_drops_the_brackets() -> None:
    assert parse_configs_to_add("retention.ms=1000,cleanup.policy=[compact,delete], segment.ms = 5") == {
        "retention.ms": "1000",
        "cleanup.policy": "compact,delete",
        "segment.ms": "5",
    }


def test_add_config_keeps_an_empty_value() -> None:
    assert parse_configs_to_add("ssl.endpoint.identification.algorithm=") == {
        "ssl.endpoint.identification.algorithm": ""
    }


@pytest.mark.parametrize("text", ["retention.ms", "a=1,b", "a=1=2"])
def test_add_config_without_key_equals_value_is_refused_with_kafkas_message(text: str) -> None:
    with pytest.raises(CommandError, match='all configs to be added must be in the format "key=val"'):
        parse_configs_to_add(text)


def test_delete_config_takes_commas_and_repeats() -> None:
    assert parse_configs_to_delete(("a,b", " c ")) == ["a", "b", "c"]


def test_shorthands_name_the_entity() -> None:
    assert resolve_entity((), (), False, topic="t") == (["topics"], ["t"], False)
    assert resolve_entity((), (), False, broker="0") == (["brokers"], ["0"], False)
    assert resolve_entity((), (), False, broker_defaults=True) == (["brokers"], [], True)


def _check(**kw: object) -> object:
    args: dict[str, object] = dict(
        alter=False,
        describe=True,
        bootstrap_server=BOOT,
        zookeeper=None,
        types=["topics"],
        names=["t"],
        entity_default=False,
        add_config=None,
        delete_config=(),
        describe_all=False,
    )
    args.update(kw)
    return check_args(**args)  # type: ignore[arg-type]


def test_a_valid_alter_names_one_entity_and_its_changes() -> None:
    options = _check(alter=True, describe=False, add_config="retention.ms=1", delete_config=("segment.ms",))
    assert options.entity == Entity("topics", "t")  # type: ignore[attr-defined]
    assert options.to_add == {"retention.ms": "1"} and options.to_delete == ["segment.ms"]  # type: ignore[attr-defined]


def test_entity_default_names_the_default_entity() -> None:
    options = _check(types=["brokers"], names=[], entity_default=True)
    assert options.entity == Entity("brokers", DEFAULT_ENTITY)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"alter": True}, "Command must include exactly one action: --describe, --alter"),
        ({"zookeeper": "127.0.0.1:2181"}, "Only one of --bootstrap-server or --zookeeper must be specified"),
        (
            {"bootstrap_server": None},
            "One of the required --bootstrap-server or --zookeeper arguments must be specified",
        ),
        (
            {"types": ["tables"]},
            "Invalid entity type tables, the entity type must be one of topics,clients,users,"
            "brokers,broker-loggers with the --bootstrap-server argument",
        ),
        (
            {"types": ["tables"], "bootstrap_server": None, "zookeeper": "z:1"},
            "Invalid entity type tables, the entity type must be one of topics,clients,users,brokers with the "
            "--zookeeper argument",
        ),
        ({"types": ["topics", "topics"]}, "Duplicate entity type(s) specified: topics"),
        (
            {"types": ["topics", "brokers"]},
            "Only 'users' and 'clients' entity types may be specified together",
        ),
        (
            {"entity_options": True, "entity_flags": True},
            "--entity-{type,name,default} should not be used in conjunction with specific entity flags",
        ),
        (
            {"describe_all": True, "bootstrap_server": None, "zookeeper": "z:1"},
            "--bootstrap-server must be specified for --all",
        ),
        ({"add_config": "a=1"}, 'Option "[describe]" can\'t be used with option "[add-config]"'),
        ({"types": []}, "At least one entity type must be specified"),
        (
            {"types": ["brokers"], "names": ["zero"]},
            "The entity name for brokers must be a valid integer broker id, but it is: zero",
        ),
        (
            {"alter": True, "describe": False, "names": []},
            "an entity name must be specified with --alter of topics",
        ),
        (
            {"alter": True, "describe": False, "types": ["brokers"], "names": []},
            "an entity-name or default entity must be specified with --alter of users, clients, brokers or ips",
        ),
        (
            {"alter": True, "describe": False},
            "At least one of --add-config, --add-config-file, or --delete-config must be specified with --alter",
        ),
    ],
)
def test_bad_command_lines_get_kafkas_messages(kw: dict[str, object], message: str) -> None:
    with pytest.raises(CommandError) as e:
        _check(**kw)
    assert str(e.value) == message


def test_entity_strings_are_kafkas() -> None:
    assert str(Entity("topics", "t")) == "topic 't'"
    assert str(Entity("brokers", "0")) == "brokers '0'"
    assert str(Entity("brokers", DEFAULT_ENTITY)) == "default brokers"
    assert str(Entity("clients", "c")) == "client-id 'c'"
