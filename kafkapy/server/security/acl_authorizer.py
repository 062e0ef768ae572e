"""AclAuthorizer: Kafka's ACLs in ZooKeeper, cached per broker, following change notifications.

`startup` loads every ACL under /kafka-acl and /kafka-acl-extended/prefixed and watches
/kafka-acl-changes and /kafka-acl-extended-changes: a new notification names one resource
pattern, which is reloaded, so ACLs written through any broker (or a tool) take effect on every
broker within a ZooKeeper round trip. `add_acls` / `remove_acls` change a resource's znode with
a conditional update (retried on a concurrent change) and then notify, as Kafka's does.
`authorize` reads only the cache (no I/O: handlers may call it on the event loop).

The API handlers ask `authorize` through kafkapy/server/apis/auth_helper.py; the blocking
calls (start-up, changes) run on executor threads, kazoo's threads, tools and tests.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kazoo.exceptions import BadVersionError, NodeExistsError

from kafkapy.server.security.acl import (
    WILDCARD,
    AclBinding,
    AclEntry,
    AuthorizerConfig,
    Operation,
    PatternType,
    ResourcePattern,
    ResourceType,
    authorize_by_resource_type,
    decide,
)
from kafkapy.server.security.principal import KafkaPrincipal
from kafkapy.zk.acl_znodes import AclChangeNotificationZNode, AclZNode, ResourceZNode
from kafkapy.zk.errors import ZkDataError
from kafkapy.zk.watchers import ZNodeChildChangeHandler

log = logging.getLogger("kafkapy.security.AclAuthorizer")

# Kafka's ZkNodeChangeNotificationListener deletes notifications older than this (15 minutes):
# every broker has read them by then, and the change directories stay small.
CHANGE_EXPIRATION_MS = 15 * 60 * 1000


class _ChangeHandler(ZNodeChildChangeHandler):
    def __init__(self, authorizer: AclAuthorizer, pattern_type: PatternType) -> None:
        super().__init__(AclChangeNotificationZNode.path(pattern_type))
        self.authorizer = authorizer
        self.pattern_type = pattern_type

    def handle_child_change(self) -> None:
        # Runs on kazoo's event thread: the ZooKeeper reads happen on the authorizer's own thread.
        self.authorizer.schedule_notifications(self.pattern_type)


class _TypeIndex:
    """One resource type's ACLs, indexed as Kafka's AclAuthorizer looks them up: a name's ACLs are
    its literal pattern's, the wildcard's and those of every prefix of it, so a decision costs
    len(name) dictionary lookups however many ACLs exist. Mutated under the authorizer's lock;
    readers need none (single dict operations are atomic in CPython)."""

    def __init__(self, resource_type: ResourceType) -> None:
        self.resource_type = resource_type
        self.literal: dict[str, frozenset[AclEntry]] = {}
        self.prefixed: dict[str, frozenset[AclEntry]] = {}
        # The lengths prefixed patterns have: a name is looked up at those lengths only.
        self._prefix_lengths: dict[int, int] = {}  # length -> how many patterns have it
        self.prefix_lengths: tuple[int, ...] = ()
        self._all: tuple[AclBinding, ...] | None = ()
        self._version = 0  # bumped by each change: a rebuild that raced one is not kept

    def put(self, pattern: ResourcePattern, entries: frozenset[AclEntry]) -> None:
        table = self.literal if pattern.pattern_type is PatternType.LITERAL else self.prefixed
        existed = pattern.name in table
        if entries:
            table[pattern.name] = entries
        else:
            table.pop(pattern.name, None)
        if table is self.prefixed and existed != bool(entries):
            n = len(pattern.name)
            self._prefix_lengths[n] = self._prefix_lengths.get(n, 0) + (1 if entries else -1)
            if not self._prefix_lengths[n]:
                del self._prefix_lengths[n]
            self.prefix_lengths = tuple(sorted(self._prefix_lengths))
        self._version += 1
        self._all = None

    def matching(self, name: str) -> Iterable[AclEntry]:
        """The entries of every pattern that applies to `name` (the common case, one literal
        pattern and no wildcard or prefixes, returns its set as is)."""
        literal = self.literal
        found = literal.get(name)
        wildcard = literal.get(WILDCARD) if name != WILDCARD else None
        prefixed = self.prefixed
        if not prefixed and not wildcard:
            return found or ()
        out = list(found or ())
        if wildcard:
            out += wildcard
        size = len(name)
        for n in self.prefix_lengths:
            if n > size:
                break
            got = prefixed.get(name[:n])
            if got:
                out += got
        return out

    def all(self) -> tuple[AclBinding, ...]:
        """Every binding of the type (KIP-679's by-type decision), rebuilt after a change."""
        cached = self._all
        if cached is None:
            version = self._version
            cached = tuple(
                AclBinding(ResourcePattern(self.resource_type, name, kind), e)
                for kind, table in ((PatternType.LITERAL, dict(self.literal)), (PatternType.PREFIXED, dict(self.prefixed)))
                for name, entries in table.items()
                for e in entries
            )  # fmt: skip
            if version == self._version:
                self._all = cached
        return cached


class AclAuthorizer:
    def __init__(self, config: AuthorizerConfig, zk: Any) -> None:
        self.config = config
        self.zk = zk  # KafkaZkClient
        self._lock = threading.Lock()
        self._acls: dict[ResourcePattern, frozenset[AclEntry]] = {}
        # What `authorize` looks in: per resource type, by name (changes are rare, decisions
        # per request).
        self._index: dict[ResourceType, _TypeIndex] = {t: _TypeIndex(t) for t in ResourceType}
        # Notifications already applied -> their creation time (ms), for the purge of old ones.
        self._seen: dict[PatternType, dict[str, float]] = {p: {} for p in PatternType}
        self._changes: ThreadPoolExecutor | None = None

    # -- life cycle (blocking) -----------------------------------------------------------------

    def startup(self) -> None:
        for pattern_type in PatternType:
            self.zk.make_sure_persistent_path_exists(AclChangeNotificationZNode.path(pattern_type))
            # Notifications older than the full load below are already reflected in it; their
            # age is unknown, so they count as created now (purged 15 minutes from now).
            now_ms = time.time() * 1000
            self._seen[pattern_type] = dict.fromkeys(
                self.zk.get_children(AclChangeNotificationZNode.path(pattern_type)), now_ms
            )
        self._load_all()
        # One thread: notifications are applied in order, never on kazoo's event thread.
        self._changes = ThreadPoolExecutor(1, thread_name_prefix="acl-change-listener")
        for pattern_type in PatternType:
            self.zk.register_znode_child_change_handler(_ChangeHandler(self, pattern_type))

    def close(self) -> None:
        if self._changes is not None:
            self._changes.shutdown(wait=False, cancel_futures=True)

    def load(self) -> None:
        """Fill the cache once, without following changes (tools that read and write ACLs)."""
        self._load_all()

    def _load_all(self) -> None:
        for pattern_type in PatternType:
            for resource_type in ResourceType:
                parent = f"{AclZNode.path(pattern_type)}/{resource_type.value}"
                for name in self.zk.get_children(parent):
                    self._reload(ResourcePattern(resource_type, name, pattern_type))

    def _reload(self, pattern: ResourcePattern) -> None:
        got = self.zk.get_data(ResourceZNode.path(pattern))
        try:
            entries = frozenset(ResourceZNode.decode(got[0] if got else None))
        except ZkDataError as e:
            log.error("Ignoring the ACLs of %s: %s", pattern, e)
            return
        with self._lock:
            if entries:
                self._acls[pattern] = entries
            else:
                self._acls.pop(pattern, None)
            self._index[pattern.resource_type].put(pattern, entries)
        log.debug("Processing ACL change for %s: %s", pattern, sorted(map(str, entries)))

    def schedule_notifications(self, pattern_type: PatternType) -> None:
        run: Callable[[], None] = lambda: self._safely_process(pattern_type)  # noqa: E731
        if self._changes is None:
            run()
        else:
            try:
                self._changes.submit(run)
            except RuntimeError:  # shut down
                pass

    def _safely_process(self, pattern_type: PatternType) -> None:
        try:
            self.process_notifications(pattern_type)
        except Exception:
            log.exception("Error processing ACL change notifications")

    def process_notifications(self, pattern_type: PatternType) -> None:
        """New acl_changes_ znodes: reload the resource each names; delete expired ones."""
        path = AclChangeNotificationZNode.path(pattern_type)
        children = sorted(self.zk.get_children(path))
        seen = self._seen[pattern_type]
        for child in children:
            if child in seen:
                continue
            got = self.zk.get_data(f"{path}/{child}")
            seen[child] = got[1].ctime if got is not None else 0.0
            if got is None:
                continue
            try:
                self._reload(AclChangeNotificationZNode.decode(pattern_type, got[0]))
            except ZkDataError as e:
                log.error("Ignoring ACL change notification %s: %s", child, e)
        # Kafka's purgeObsoleteNotifications: every broker deletes what has expired.
        expired_before = time.time() * 1000 - CHANGE_EXPIRATION_MS
        for child in [c for c in children if seen[c] < expired_before]:
            self.zk.delete_path(f"{path}/{child}")
        self._seen[pattern_type] = {c: seen[c] for c in children}

    # -- decisions (cache only) ---------------------------------------------------------------

    def authorize(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: Operation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        who = str(principal)
        if who in self.config.super_users:  # before any lookup: super users cost one set test
            return True
        return decide(self.config, self._index[resource_type].matching(name), who, host, operation)

    def authorize_by_resource_type(
        self, principal: KafkaPrincipal, host: str, operation: Operation, resource_type: ResourceType
    ) -> bool:
        bindings = self._index[resource_type].all()
        return authorize_by_resource_type(self.config, bindings, principal, host, operation, resource_type)

    def acls(self) -> list[AclBinding]:
        with self._lock:
            return [AclBinding(p, e) for p, entries in self._acls.items() for e in entries]

    # -- changes (blocking) -------------------------------------------------------------------

    def add_acls(self, pattern: ResourcePattern, entries: Iterable[AclEntry]) -> None:
        self._update(pattern, lambda current: current | set(entries))

    def remove_acls(self, pattern: ResourcePattern, entries: Iterable[AclEntry]) -> None:
        self._update(pattern, lambda current: current - set(entries))

    def _update(self, pattern: ResourcePattern, change: Any) -> None:
        path = ResourceZNode.path(pattern)
        for _ in range(100):  # a concurrent writer makes the conditional update fail: read again
            got = self.zk.get_data(path)
            current = ResourceZNode.decode(got[0]) if got else set()
            wanted = change(current)
            if wanted == current:
                return
            if got is None:
                try:
                    self.zk.create_recursive(path, ResourceZNode.encode(wanted))
                except NodeExistsError:
                    continue
            elif not wanted:
                try:
                    if not self.zk.delete_path(path, got[1].version):
                        continue
                except BadVersionError:
                    continue
            else:
                ok, _ = self.zk.conditional_update_path(path, ResourceZNode.encode(wanted), got[1].version)
                if not ok:
                    continue
            self.zk.create_recursive(
                AclChangeNotificationZNode.create_path(pattern.pattern_type),
                AclChangeNotificationZNode.encode(pattern),
                sequential=True,
            )
            self._reload(pattern)
            return
        raise RuntimeError(f"Could not update the ACLs of {pattern}: too many concurrent changes")
