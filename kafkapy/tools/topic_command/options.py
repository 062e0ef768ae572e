"""kafka-topics' options: which combinations are allowed, and parsing of their values.

Kafka 2.8's TopicCommandOptions.checkArgs works on "which options were given" (joptsimple's
`options.has`), so we do too: `TopicCommandOptions.given` holds the option names present on the
command line, and the checks below are tables over those names, in Kafka's order, with Kafka's
messages (`Missing required argument "[topic]"`, `Option "[config]" can't be used with option
"[list]"`). Value parsing (configs, replica assignment, the topic regex) raises
TopicCommandError, which the command prints as "Error while executing topic command : ...".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kafkapy.protocol.errors import InvalidConfigurationException, InvalidReplicaAssignmentException
from kafkapy.server.log.log_config import TOPIC_CONFIG_DEF, ConfigException, LogConfig
from kafkapy.zk.topic_name import is_internal

ACTIONS = ("create", "list", "alter", "describe", "delete")
REPORT_OPTS = (
    "under-replicated-partitions",
    "under-min-isr-partitions",
    "at-min-isr-partitions",
    "unavailable-partitions",
)
USAGE_MESSAGE = "Create, delete, describe, or change a topic."
ONE_ACTION_MESSAGE = (
    "Command must include exactly one action: --list, --describe, --create, --alter or --delete"
)
ONE_MODE_MESSAGE = "Only one of --bootstrap-server or --zookeeper must be specified"
CONFIGS_VIA_BOOTSTRAP = (
    " (the kafka-configs CLI supports altering topic configs with a --bootstrap-server option)"
)
MESSAGE_FORMAT_VERSION = "message.format.version"


class UsageError(Exception):
    """A bad combination of options: Kafka prints the message with its usage and exits 1."""


class TopicCommandError(Exception):
    """An action failed for a reason Kafka reports with IllegalArgumentException and friends."""


def _others(*excluded: str) -> tuple[str, ...]:
    return tuple(a for a in ACTIONS if a not in excluded)


def _report_conflicts(option: str, *extra: str) -> tuple[str, ...]:
    # Kafka: allTopicLevelOpts -- describe ++ allReplicationReportOpts - option + overrides
    return (*_others("describe"), *(r for r in REPORT_OPTS if r != option), "topics-with-overrides", *extra)


# (option, options it cannot be used with), in the order Kafka checks them.
INVALID_COMBINATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("config", _others("alter", "create")),
    ("delete-config", (*_others("alter"), "bootstrap-server")),
    ("partitions", _others("alter", "create")),
    ("replication-factor", _others("create")),
    ("replica-assignment", _others("create", "alter")),
    ("under-replicated-partitions", _report_conflicts("under-replicated-partitions")),
    ("under-min-isr-partitions", _report_conflicts("under-min-isr-partitions", "zookeeper")),
    ("at-min-isr-partitions", _report_conflicts("at-min-isr-partitions", "zookeeper")),
    ("unavailable-partitions", _report_conflicts("unavailable-partitions")),
    ("topics-with-overrides", (*_others("describe"), *REPORT_OPTS)),
    ("if-exists", _others("alter", "delete", "describe")),
    ("if-not-exists", _others("create")),
    ("exclude-internal", _others("list", "describe")),
)


@dataclass(frozen=True, slots=True)
class TopicCommandOptions:
    """What the user typed: `given` names every option present; the values are raw strings or
    ints exactly as given (parsing that can fail happens inside the action, as in Kafka)."""

    given: frozenset[str]
    bootstrap_server: str | None = None
    zookeeper: str | None = None
    command_config: str | None = None
    topic: str | None = None
    partitions: int | None = None
    replication_factor: int | None = None
    replica_assignment: str | None = None
    configs: tuple[str, ...] = ()
    delete_configs: tuple[str, ...] = ()

    def has(self, option: str) -> bool:
        return option in self.given

    @property
    def if_exists(self) -> bool:
        return self.has("if-exists")

    @property
    def if_not_exists(self) -> bool:
        return self.has("if-not-exists")

    @property
    def exclude_internal(self) -> bool:
        return self.has("exclude-internal")

    @property
    def report_overridden_configs(self) -> bool:
        return self.has("topics-with-overrides")


def _usage(message: str) -> UsageError:
    return UsageError(message)


def _require(opts: TopicCommandOptions, *options: str) -> None:
    for option in options:
        if not opts.has(option):
            raise _usage(f'Missing required argument "[{option}]"')


def check_args(opts: TopicCommandOptions) -> None:
    """Kafka's checkArgs: raise UsageError for the first rule the options break."""
    actions = [a for a in ACTIONS if opts.has(a)]
    if len(actions) != 1:
        raise _usage(ONE_ACTION_MESSAGE)
    if opts.has("bootstrap-server") == opts.has("zookeeper"):
        raise _usage(ONE_MODE_MESSAGE)
    if opts.has("describe") and opts.has("if-exists"):
        _require(opts, "topic")
    if not opts.has("list") and not opts.has("describe"):
        _require(opts, "topic")
    if opts.has("create") and not opts.has("replica-assignment") and opts.has("zookeeper"):
        _require(opts, "partitions", "replication-factor")
    if opts.has("bootstrap-server") and opts.has("alter"):
        if opts.has("config"):
            raise _usage(
                'Option combination "[bootstrap-server],[config]" can\'t be used with option '
                f'"[alter]"{CONFIGS_VIA_BOOTSTRAP}'
            )
        _require(opts, "partitions")
    for option, conflicts in INVALID_COMBINATIONS:
        if option == "replica-assignment" and opts.has("create"):
            conflicts = (*conflicts, "partitions", "replication-factor")
        if opts.has(option):
            for other in conflicts:
                if opts.has(other):
                    raise _usage(f'Option "[{option}]" can\'t be used with option "[{other}]"')


# -- values ---------------------------------------------------------------------------------------

_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def parse_java_int(text: str) -> int:
    """Integer.parseInt: no spaces or underscores (Python's int() would take both)."""
    if not _JAVA_INT.fullmatch(text):
        raise TopicCommandError(f'For input string: "{text}"')
    return int(text)


def _java_split(text: str, pattern: str) -> list[str]:
    """String.split: trailing empty strings are dropped, so "a=" splits into ["a"]; with no match
    the result is the whole string, even an empty one."""
    parts = re.split(pattern, text)
    if len(parts) == 1:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def parse_replica_assignment(text: str) -> dict[int, list[int]]:
    """'0:1,1:2' -> {0: [0, 1], 1: [1, 2]}: one broker list per partition, in partition order."""
    result: dict[int, list[int]] = {}
    for partition, replicas_text in enumerate(_java_split(text, ",")):
        replicas = [parse_java_int(b.strip()) for b in _java_split(replicas_text, ":")]
        try:
            check_partition_replicas(partition, replicas, len(result[0]) if result else len(replicas))
        except InvalidReplicaAssignmentException as e:
            raise TopicCommandError(e.message) from None
        result[partition] = replicas
    return result


def check_partition_replicas(partition: int, replicas: Sequence[int], replication_factor: int) -> None:
    """Kafka's parseReplicaAssignment checks of one partition's brokers, raised as the broker
    error they stand for (the console reports its name; the topics command only the message)."""
    duplicates = sorted({b for b in replicas if replicas.count(b) > 1})
    if duplicates:
        raise InvalidReplicaAssignmentException(
            "Partition replica lists may not contain duplicate entries: " + ",".join(map(str, duplicates))
        )
    if len(replicas) != replication_factor:
        raise InvalidReplicaAssignmentException(
            f"Partition {partition} has different replication factor: " + ",".join(map(str, replicas))
        )


def parse_configs_to_add(configs: Iterable[str]) -> dict[str, str]:
    """`--config k=v` values, checked as Kafka's LogConfig.validate checks them."""
    pairs = [_java_split(c, r"\s*=\s*") for c in configs]
    if not all(len(p) == 2 for p in pairs):
        # Scala's require() prefixes its message with "requirement failed: ".
        raise TopicCommandError(
            "requirement failed: Invalid topic config: all configs to be added must be "
            'in the format "key=val".'
        )
    props = {k.strip(): v.strip() for k, v in pairs}
    try:
        validate_topic_configs(props)
    except InvalidConfigurationException as e:
        raise TopicCommandError(e.message) from None
    return props


def validate_topic_configs(props: Mapping[str, str]) -> None:
    """Kafka's LogConfig.validate, as TopicCommand runs it before sending: INVALID_CONFIG."""
    try:
        LogConfig.from_props(dict(props))
    except ConfigException as e:
        raise InvalidConfigurationException(str(e)) from None


def config_warnings(props: Mapping[str, str]) -> list[str]:
    if MESSAGE_FORMAT_VERSION not in props:
        return []
    return [
        f"WARNING: The configuration {MESSAGE_FORMAT_VERSION}={props[MESSAGE_FORMAT_VERSION]} is "
        "specified. This configuration will be ignored if the version is newer than the "
        "inter.broker.protocol.version specified in the broker."
    ]


def parse_configs_to_delete(names: Iterable[str]) -> list[str]:
    """`--delete-config` names, checked as Kafka's LogConfig.validateNames checks them."""
    trimmed = [n.strip() for n in names]
    unknown = TOPIC_CONFIG_DEF.unknown(trimmed)
    if unknown:
        raise TopicCommandError(f"Unknown topic config name: {unknown[0]}")
    return trimmed


@dataclass(frozen=True, slots=True)
class CommandTopicPartition:
    """The create/alter arguments, parsed (Kafka builds this inside the action's try block, so a
    bad value is an "Error while executing topic command", not a usage error)."""

    name: str
    partitions: int | None
    replication_factor: int | None
    replica_assignment: dict[int, list[int]] | None
    configs_to_add: dict[str, str] = field(default_factory=dict)
    configs_to_delete: list[str] = field(default_factory=list)
    if_not_exists: bool = False
    # Kafka's CommandTopicPartition: --disable-rack-aware only affects --create's placement.
    rack_aware: bool = True

    @classmethod
    def from_options(cls, opts: TopicCommandOptions) -> CommandTopicPartition:
        assignment = parse_replica_assignment(opts.replica_assignment) if opts.replica_assignment else None
        return cls(
            name=opts.topic or "",
            partitions=opts.partitions,
            replication_factor=opts.replication_factor,
            replica_assignment=assignment,
            configs_to_add=parse_configs_to_add(opts.configs),
            configs_to_delete=parse_configs_to_delete(opts.delete_configs),
            if_not_exists=opts.if_not_exists,
            rack_aware=not opts.has("disable-rack-aware"),
        )


# -- topic selection ------------------------------------------------------------------------------


def include_list_regex(raw: str) -> re.Pattern[str]:
    """Kafka's IncludeList: ',' means '|', spaces and surrounding quotes are dropped."""
    regex = raw.strip().replace(",", "|").replace(" ", "")
    regex = re.sub(r"""^["']+""", "", regex)
    regex = re.sub(r"""["']+$""", "", regex)
    try:
        return re.compile(regex)
    except re.error:
        raise TopicCommandError(f"{regex} is an invalid regex.") from None


def select_topics(all_topics: Iterable[str], include: str | None, exclude_internal: bool) -> list[str]:
    """Kafka's doGetTopics: sorted, matching the whole name, internal topics kept unless excluded."""
    pattern = include_list_regex(include) if include is not None else None
    return [
        t
        for t in sorted(all_topics)
        if (pattern is None or pattern.fullmatch(t)) and not (exclude_internal and is_internal(t))
    ]


def ensure_topic_exists(found: list[str], requested: str | None, require_exists: bool) -> None:
    if requested is not None and require_exists and not found:
        raise TopicCommandError(f"Topic '{requested}' does not exist as expected")
