"""kafkapy-acls: kafka-acls.sh (kafka.admin.AclCommand, Kafka 2.8) in click.

    kafkapy-acls --bootstrap-server h:p [--command-config client.properties] --add \\
        --allow-principal User:alice --operation Read --topic orders
    kafkapy-acls --authorizer-properties zookeeper.connect=h:2181 --list [--topic orders]
    kafkapy-acls --bootstrap-server h:p --remove --topic orders --force

Through `--bootstrap-server` the ACLs go through CreateAcls / DescribeAcls / DeleteAcls (the
principal of `--command-config` needs Alter, or Describe to list, on the cluster); through
`--authorizer-properties zookeeper.connect=...` they are written to ZooKeeper directly, with the
change notifications every broker's AclAuthorizer follows. The output lines are AclCommand's
(each entry line starts with a space and a tab):

    Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`:
      (principal=User:alice, host=*, operation=READ, permissionType=ALLOW)

    Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`:
      (principal=User:alice, host=*, operation=READ, permissionType=ALLOW)
"""

from __future__ import annotations

import contextlib
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import click

from kafkapy.server.security.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclEntry,
    AuthorizerConfig,
    Operation,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
)
from kafkapy.server.security.acl_filter import AclBindingFilter, PatternFilter
from kafkapy.tools.command_line import run_command

_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 110}
_PURPOSE = "This tool helps to manage acls on kafka."
NEWLINE = "\n"

# AclCommand's operation sets of the convenience options.
PRODUCER_TOPIC_OPS = (Operation.WRITE, Operation.DESCRIBE, Operation.CREATE)
PRODUCER_TXN_OPS = (Operation.WRITE, Operation.DESCRIBE)
CONSUMER_TOPIC_OPS = (Operation.READ, Operation.DESCRIBE)
CONSUMER_GROUP_OPS = (Operation.READ,)


class UsageError(Exception):
    """AclCommand's usage errors: one line, then exit 1."""


def parse_operation(text: str) -> Operation:
    """Kafka's SecurityUtils.operation: `Read`, `READ`, `IdempotentWrite`, `idempotent_write`."""
    key = text.replace("_", "").replace("-", "").lower()
    for op in Operation:
        if op.value.lower() == key:
            return op
    raise UsageError(f"Invalid operation {text}. Valid values: {', '.join(op.value for op in Operation)}")


def pattern_text(p: ResourcePattern) -> str:
    return f"ResourcePattern(resourceType={p.resource_type.name}, name={p.name}, patternType={p.pattern_type.name})"


def filter_text(f: AclBindingFilter) -> str:
    kind = "ANY" if f.resource_type is None else f.resource_type.name
    name = "null" if f.name is None else f.name
    return f"ResourcePatternFilter(resourceType={kind}, name={name}, patternType={f.pattern.name})"


def entry_text(e: AclEntry) -> str:
    return f"(principal={e.principal}, host={e.host}, operation={e.operation.name}, permissionType={e.permission.name})"


def _entries_block(entries: Iterable[AclEntry]) -> str:
    return NEWLINE.join("\t" + entry_text(e) for e in entries)


def _entry_key(e: AclEntry) -> tuple[str, str, str, str]:
    return e.principal, e.host, e.operation.value, e.permission.value


# -- where the ACLs are ---------------------------------------------------------------------------


class AclStore(Protocol):
    def add(self, pattern: ResourcePattern, entries: Sequence[AclEntry]) -> None: ...

    def remove(self, filters: Sequence[AclBindingFilter]) -> None: ...

    def describe(self, f: AclBindingFilter) -> list[AclBinding]: ...

    def close(self) -> None: ...


class AdminStore:
    """Through a broker: CreateAcls / DescribeAcls / DeleteAcls."""

    def __init__(self, bootstrap: str, command_config: str | None) -> None:
        from kafkapy.client.admin import AdminClient
        from kafkapy.client.client_security import client_security, connector
        from kafkapy.common.properties import load_file

        props = load_file(command_config) if command_config else {}
        self.admin = AdminClient(bootstrap, connector=connector(client_security(props), "kafkapy-acls"))

    def add(self, pattern: ResourcePattern, entries: Sequence[AclEntry]) -> None:
        from kafkapy.client.acls import create_acls

        create_acls(self.admin, [AclBinding(pattern, e) for e in entries])

    def remove(self, filters: Sequence[AclBindingFilter]) -> None:
        from kafkapy.client.acls import delete_acls

        delete_acls(self.admin, filters)

    def describe(self, f: AclBindingFilter) -> list[AclBinding]:
        from kafkapy.client.acls import describe_acls

        return describe_acls(self.admin, f)

    def close(self) -> None:
        self.admin.close()


class ZkStore:
    """Straight to ZooKeeper, as AclCommand's --authorizer-properties path does (the brokers'
    caches follow the change notifications the authorizer writes)."""

    def __init__(self, properties: dict[str, str]) -> None:
        from kafkapy.server.security.acl_authorizer import AclAuthorizer
        from kafkapy.zk.kafka_zk_client import KafkaZkClient
        from kafkapy.zk.zk_auth import tool_zk_security

        connect = properties.get("zookeeper.connect")
        if not connect:
            raise UsageError("--authorizer-properties must set zookeeper.connect")
        self.zk = KafkaZkClient(
            connect, int(properties.get("zookeeper.session.timeout.ms", "18000")), 18000, **tool_zk_security()
        )
        self.zk.start()
        self.authorizer = AclAuthorizer(AuthorizerConfig(), self.zk)
        self.authorizer.load()

    def add(self, pattern: ResourcePattern, entries: Sequence[AclEntry]) -> None:
        self.authorizer.add_acls(pattern, entries)

    def remove(self, filters: Sequence[AclBindingFilter]) -> None:
        by_pattern: dict[ResourcePattern, set[AclEntry]] = defaultdict(set)
        current = self.authorizer.acls()
        for f in filters:
            for b in f.select(current):
                by_pattern[b.pattern].add(b.entry)
        for pattern, entries in by_pattern.items():
            self.authorizer.remove_acls(pattern, entries)

    def describe(self, f: AclBindingFilter) -> list[AclBinding]:
        return f.select(self.authorizer.acls())

    def close(self) -> None:
        self.zk.close()


# -- what the options ask for ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Options:
    topics: tuple[str, ...]
    groups: tuple[str, ...]
    cluster: bool
    transactional_ids: tuple[str, ...]
    pattern_type: str  # literal, prefixed, any, match
    allow_principals: tuple[str, ...]
    deny_principals: tuple[str, ...]
    allow_hosts: tuple[str, ...]
    deny_hosts: tuple[str, ...]
    operations: tuple[str, ...]
    producer: bool
    consumer: bool
    idempotent: bool
    delegation_tokens: tuple[str, ...] = ()

    def patterns(self, kinds: Iterable[ResourceType] | None = None) -> list[ResourcePattern]:
        """The named resources (add and remove need a concrete pattern type)."""
        pattern_type = PatternType(self.pattern_type.upper())
        wanted = set(kinds) if kinds is not None else set(ResourceType)
        out = []
        if ResourceType.TOPIC in wanted:
            out += [ResourcePattern(ResourceType.TOPIC, t, pattern_type) for t in self.topics]
        if ResourceType.GROUP in wanted:
            out += [ResourcePattern(ResourceType.GROUP, g, pattern_type) for g in self.groups]
        if ResourceType.CLUSTER in wanted and self.cluster:
            out.append(ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL))
        if ResourceType.TRANSACTIONAL_ID in wanted:
            out += [
                ResourcePattern(ResourceType.TRANSACTIONAL_ID, t, pattern_type)
                for t in self.transactional_ids
            ]
        if ResourceType.DELEGATION_TOKEN in wanted:
            out += [
                ResourcePattern(ResourceType.DELEGATION_TOKEN, t, pattern_type)
                for t in self.delegation_tokens
            ]
        return out

    def filters(self) -> list[AclBindingFilter]:
        """The resource filters of --list / --remove; no resource option: every ACL."""
        pattern = PatternFilter(self.pattern_type.upper())
        out = [AclBindingFilter(ResourceType.TOPIC, t, pattern) for t in self.topics]
        out += [AclBindingFilter(ResourceType.GROUP, g, pattern) for g in self.groups]
        if self.cluster:
            out.append(AclBindingFilter(ResourceType.CLUSTER, CLUSTER_NAME, PatternFilter.LITERAL))
        out += [AclBindingFilter(ResourceType.TRANSACTIONAL_ID, t, pattern) for t in self.transactional_ids]
        out += [AclBindingFilter(ResourceType.DELEGATION_TOKEN, t, pattern) for t in self.delegation_tokens]
        return out

    def entries(self, operations: Iterable[Operation]) -> list[AclEntry]:
        ops = list(operations)
        allow_hosts = self.allow_hosts or (("*",) if self.allow_principals else ())
        deny_hosts = self.deny_hosts or (("*",) if self.deny_principals else ())
        out = [
            AclEntry(p, h, op, Permission.ALLOW)
            for p in self.allow_principals
            for h in allow_hosts
            for op in ops
        ]
        out += [
            AclEntry(p, h, op, Permission.DENY)
            for p in self.deny_principals
            for h in deny_hosts
            for op in ops
        ]
        return out

    def requested_acls(self) -> dict[ResourcePattern, list[AclEntry]]:
        """Resource -> entries for --add / --remove with principals (AclCommand's
        getResourceToAcls, with the --producer / --consumer shortcuts)."""
        acls: dict[ResourcePattern, list[AclEntry]] = defaultdict(list)
        if self.producer or self.consumer:
            if self.producer:
                for p in self.patterns([ResourceType.TOPIC]):
                    acls[p] += self.entries(PRODUCER_TOPIC_OPS)
                for p in self.patterns([ResourceType.TRANSACTIONAL_ID]):
                    acls[p] += self.entries(PRODUCER_TXN_OPS)
                if self.idempotent:
                    cluster = ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME)
                    acls[cluster] += self.entries([Operation.IDEMPOTENT_WRITE])
            if self.consumer:
                for p in self.patterns([ResourceType.TOPIC]):
                    acls[p] += self.entries(CONSUMER_TOPIC_OPS)
                for p in self.patterns([ResourceType.GROUP]):
                    acls[p] += self.entries(CONSUMER_GROUP_OPS)
            return {p: list(dict.fromkeys(es)) for p, es in acls.items()}
        ops = [parse_operation(o) for o in self.operations] or [Operation.ALL]
        for p in self.patterns():
            _check_operations(p.resource_type, ops)
            acls[p] += self.entries(ops)
        return dict(acls)


def _check_operations(resource_type: ResourceType, ops: Sequence[Operation]) -> None:
    from kafkapy.server.apis.auth_helper import SUPPORTED_OPERATIONS

    supported = (Operation.ALL, *SUPPORTED_OPERATIONS[resource_type])
    unsupported = [op for op in ops if op not in supported]
    if unsupported:
        raise UsageError(
            f"ResourceType {resource_type.name} only supports operations {','.join(op.name for op in supported)}"
        )


# -- the actions ----------------------------------------------------------------------------------


def add_acls(store: AclStore, opts: Options, out: Callable[[str], None]) -> None:
    acls = opts.requested_acls()
    if not acls:
        raise UsageError(
            "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."
        )
    for pattern, entries in acls.items():
        if not entries:
            raise UsageError(
                "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."
            )
        out(
            f"Adding ACLs for resource `{pattern_text(pattern)}`: {NEWLINE} {_entries_block(entries)} {NEWLINE}"
        )
        store.add(pattern, entries)
    list_acls(store, opts, out)


def remove_acls(store: AclStore, opts: Options, force: bool, out: Callable[[str], None]) -> None:
    if opts.allow_principals or opts.deny_principals:
        for pattern, entries in opts.requested_acls().items():
            f = AclBindingFilter(
                pattern.resource_type, pattern.name, PatternFilter(pattern.pattern_type.value)
            )
            question = (f"Are you sure you want to remove ACLs: {NEWLINE} {_entries_block(entries)} {NEWLINE} "
                        f"from resource filter `{filter_text(f)}`? (y/n)")  # fmt: skip
            if force or _confirm(question, out):
                store.remove([
                    AclBindingFilter(f.resource_type, f.name, f.pattern, e.principal, e.host, e.operation, e.permission)
                    for e in entries
                ])  # fmt: skip
        return
    filters = opts.filters()
    if not filters:
        raise UsageError(
            "You must specify one of: --topic, --cluster, --group, --transactional-id when removing ACLs."
        )
    for f in filters:
        if force or _confirm(
            f"Are you sure you want to delete all ACLs for resource filter `{filter_text(f)}`? (y/n)", out
        ):
            store.remove([f])


def _confirm(question: str, out: Callable[[str], None]) -> bool:
    out(question)
    return sys.stdin.readline().strip().lower() == "y"


def list_acls(
    store: AclStore, opts: Options, out: Callable[[str], None], principals: Sequence[str] = ()
) -> None:
    filters = opts.filters() or [AclBindingFilter(pattern=PatternFilter.ANY)]
    by_pattern: dict[ResourcePattern, list[AclEntry]] = defaultdict(list)
    for f in filters:
        for b in store.describe(f):
            if b.entry not in by_pattern[b.pattern]:
                by_pattern[b.pattern].append(b.entry)
    ordered = sorted(
        by_pattern.items(), key=lambda kv: (kv[0].resource_type.value, kv[0].pattern_type.value, kv[0].name)
    )
    every: list[str | None] = [None]
    for principal in principals or every:
        if principal is not None:
            out(f"ACLs for principal `{principal}`")
        for pattern, entries in ordered:
            shown = sorted(
                (e for e in entries if principal is None or e.principal == principal), key=_entry_key
            )
            if shown:
                out(
                    f"Current ACLs for resource `{pattern_text(pattern)}`: {NEWLINE} {_entries_block(shown)} {NEWLINE}"
                )


# -- the command ----------------------------------------------------------------------------------


def _many(name: str, help_text: str, metavar: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    return click.option(name, multiple=True, metavar=metavar, help=help_text)


@click.command(context_settings=_CONTEXT, help=_PURPOSE)
@click.option(
    "--bootstrap-server",
    metavar="server to connect to",
    help="A list of host/port pairs to use for establishing the connection to the Kafka cluster.",
)
@click.option(
    "--command-config",
    metavar="command-config",
    help="A property file containing configs to be passed to Admin Client.",
)
@click.option("--authorizer", metavar="authorizer", help="Fully qualified class name of the authorizer.")
@_many(
    "--authorizer-properties",
    "zookeeper.connect=host:port (ZooKeeper-era path, no broker needed).",
    "authorizer-properties",
)
@click.option("--add", "action_add", is_flag=True, help="Indicates you are trying to add ACLs.")
@click.option("--remove", "action_remove", is_flag=True, help="Indicates you are trying to remove ACLs.")
@click.option(
    "--list",
    "action_list",
    is_flag=True,
    help="List ACLs for the specified resource, use --topic <topic> or --group <group> or --cluster.",
)
@_many("--topic", "topic to which ACLs should be added or removed.", "topic")
@_many("--group", "Consumer Group to which the ACLs should be added or removed.", "group")
@click.option("--cluster", is_flag=True, help="Add/Remove cluster ACLs.")
@_many(
    "--transactional-id", "The transactionalId to which ACLs should be added or removed.", "transactional-id"
)
@_many("--delegation-token", "Delegation token to which ACLs should be added or removed.", "delegation-token")
@click.option(
    "--resource-pattern-type",
    default="LITERAL",
    metavar="ANY|MATCH|LITERAL|PREFIXED",
    help="The type of the resource pattern or pattern filter (default: LITERAL).",
)
@_many("--allow-principal", "principal is in principalType:name format.", "allow-principal")
@_many("--deny-principal", "principal is in principalType:name format.", "deny-principal")
@_many("--principal", "List ACLs for the specified principal.", "principal")
@_many(
    "--allow-host", "Host from which principals listed in --allow-principal will have access.", "allow-host"
)
@_many(
    "--deny-host", "Host from which principals listed in --deny-principal will be denied access.", "deny-host"
)
@_many("--operation", "Operation that is being allowed or denied (default: All).", "operation")
@click.option("--producer", is_flag=True, help="Convenience option to add/remove ACLs for producer role.")
@click.option("--consumer", is_flag=True, help="Convenience option to add/remove ACLs for consumer role.")
@click.option("--idempotent", is_flag=True, help="Enable idempotence for the producer (with --producer).")
@click.option("--force", is_flag=True, help="Assume Yes to all queries and do not prompt.")
def command(
    bootstrap_server: str | None, command_config: str | None, authorizer: str | None,
    authorizer_properties: tuple[str, ...], action_add: bool, action_remove: bool, action_list: bool,
    topic: tuple[str, ...], group: tuple[str, ...], cluster: bool, transactional_id: tuple[str, ...],
    delegation_token: tuple[str, ...], resource_pattern_type: str, allow_principal: tuple[str, ...],
    deny_principal: tuple[str, ...], principal: tuple[str, ...], allow_host: tuple[str, ...], deny_host: tuple[str, ...],
    operation: tuple[str, ...], producer: bool, consumer: bool, idempotent: bool, force: bool,
) -> None:  # fmt: skip
    try:
        store_factory = _check_usage(
            bootstrap_server, command_config, authorizer_properties, (action_add, action_remove, action_list),
            resource_pattern_type, producer, consumer, topic, group, transactional_id,
        )  # fmt: skip
        opts = Options(
            topic, group, cluster, transactional_id, resource_pattern_type.lower(), allow_principal,
            deny_principal, allow_host, deny_host, operation, producer, consumer, idempotent, delegation_token,
        )  # fmt: skip
        store = store_factory()
    except UsageError as e:
        click.echo(str(e), err=True)
        sys.exit(1)
    except Exception as e:  # noqa: BLE001 - a connection that cannot be made: Kafka's "Error while ..." line
        click.echo(f"Error while executing ACL command: {getattr(e, 'message', None) or e}", err=True)
        sys.exit(1)
    try:
        if action_add:
            add_acls(store, opts, click.echo)
        elif action_remove:
            remove_acls(store, opts, force, click.echo)
        else:
            list_acls(store, opts, click.echo, principal)
    except UsageError as e:
        click.echo(str(e), err=True)
        sys.exit(1)
    except Exception as e:  # noqa: BLE001 - AclCommand prints the failure and exits 1
        click.echo(f"Error while executing ACL command: {getattr(e, 'message', None) or e}", err=True)
        sys.exit(1)
    finally:
        with contextlib.suppress(Exception):
            store.close()


def _check_usage(
    bootstrap_server: str | None, command_config: str | None, authorizer_properties: tuple[str, ...],
    actions: tuple[bool, bool, bool], pattern_type: str, producer: bool, consumer: bool,
    topics: tuple[str, ...], groups: tuple[str, ...], transactional_ids: tuple[str, ...],
) -> Callable[[], AclStore]:  # fmt: skip
    """AclCommand's option checks; the store the command will use."""
    if (bootstrap_server is None) == (not authorizer_properties):
        raise UsageError("Only one of --authorizer-properties or --bootstrap-server must be specified")
    if sum(actions) != 1:
        raise UsageError("Command must include exactly one action: --list, --add, --remove. ")
    add, remove, _ = actions
    kind = pattern_type.upper()
    if kind not in ("ANY", "MATCH", "LITERAL", "PREFIXED"):
        raise UsageError(f"Invalid --resource-pattern-type {pattern_type}: ANY, MATCH, LITERAL or PREFIXED")
    if (add or remove) and kind in ("ANY", "MATCH") and (add or producer or consumer):
        raise UsageError(f"A '--resource-pattern-type' value of '{kind}' is not valid when adding acls.")
    if (producer or consumer) and not (add or remove):
        raise UsageError("With --producer or --consumer you must specify one of --add or --remove")
    if producer and not (topics or transactional_ids):
        raise UsageError("With --producer you must specify a --topic")
    if consumer and (not topics or not groups):
        raise UsageError("With --consumer you must specify a --topic and a --group and no --cluster or "
                         "--transactional-id option should be specified.")  # fmt: skip
    if bootstrap_server is not None:
        return lambda: AdminStore(bootstrap_server, command_config)
    props: dict[str, str] = {}
    for item in authorizer_properties:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"Invalid --authorizer-properties {item}: expected key=value")
        props[key.strip()] = value.strip()
    return lambda: ZkStore(props)


def main(argv: Sequence[str] | None = None) -> None:
    run_command(command, "kafkapy-acls", argv, usage_if_no_args=True, purpose=_PURPOSE)


if __name__ == "__main__":
    main()
