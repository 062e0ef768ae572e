"""Znode watches as Kafka's ZooKeeperClient offers them: handlers registered by path.

ZooKeeper watches fire once; kazoo's DataWatch/ChildrenWatch recipes re-arm them after every
event and after a reconnect or a new session, so a registered handler keeps firing until it is
unregistered. Handlers run on kazoo's event thread: they must only hand work off (the controller
puts an event on its queue), never block on ZooKeeper round trips of their own for long.
"""

from __future__ import annotations

import itertools
import logging
import threading
from typing import Any

from kazoo.client import KazooClient
from kazoo.protocol.states import ZnodeStat
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

log = logging.getLogger(__name__)


class ZNodeChangeHandler:
    """Creation, deletion and data changes of one znode; override what you need."""

    def __init__(self, path: str) -> None:
        self.path = path

    def handle_creation(self) -> None:
        pass

    def handle_deletion(self) -> None:
        pass

    def handle_data_change(self) -> None:
        pass


class ZNodeChildChangeHandler:
    """Changes to the set of children of one znode."""

    def __init__(self, path: str) -> None:
        self.path = path

    def handle_child_change(self) -> None:
        pass


class StateChangeHandler:
    """Session lifecycle: the old session expired, then a new one was established.

    The broker re-registers /brokers/ids/<id> and the controller re-runs its election in
    `after_initializing_session`, since ephemeral znodes died with the old session.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def before_initializing_session(self) -> None:
        pass

    def after_initializing_session(self) -> None:
        pass


def _safely(what: str, fn: Any) -> None:
    # A failing handler must not kill kazoo's event thread (nor stop the watch).
    try:
        fn()
    except Exception:
        log.exception("Error while running %s", what)


class WatchRegistry:
    """Handlers by path; at most one data handler and one child handler per path, like Kafka."""

    def __init__(self, zk: KazooClient) -> None:
        self._zk = zk
        self._lock = threading.Lock()
        # path -> (registration token, handler); a watch whose token is no longer current
        # stops itself the next time it fires (kazoo cannot cancel a watch directly).
        self._data: dict[str, tuple[int, ZNodeChangeHandler]] = {}
        self._child: dict[str, tuple[int, ZNodeChildChangeHandler]] = {}
        self._tokens = itertools.count(1)

    # -- data watches -------------------------------------------------------------------------

    def register_data(self, handler: ZNodeChangeHandler) -> bool:
        """Register (replacing any handler on that path); returns whether the znode exists now."""
        token = next(self._tokens)
        with self._lock:
            self._data[handler.path] = (token, handler)
        exists = threading.Event()
        prev: list[ZnodeStat | None] = []

        def on_data(_data: bytes | None, stat: ZnodeStat | None, _event: Any = None) -> bool | None:
            if not self._current(self._data, handler.path, token):
                return False
            if not prev:
                # The recipe calls once on registration: that is the baseline, not an event.
                prev.append(stat)
                if stat is not None:
                    exists.set()
                return None
            before, prev[0] = prev[0], stat
            # Compare states rather than trusting the event type: after a reconnect kazoo
            # reports what changed meanwhile with no event at all.
            if before is None and stat is not None:
                _safely(f"handle_creation of {handler.path}", handler.handle_creation)
            elif before is not None and stat is None:
                _safely(f"handle_deletion of {handler.path}", handler.handle_deletion)
            elif before is not None and stat is not None:
                if before.czxid != stat.czxid:
                    # Deleted and re-created between two looks: report both.
                    _safely(f"handle_deletion of {handler.path}", handler.handle_deletion)
                    _safely(f"handle_creation of {handler.path}", handler.handle_creation)
                else:
                    _safely(f"handle_data_change of {handler.path}", handler.handle_data_change)
            return None

        DataWatch(self._zk, handler.path, on_data)
        return exists.is_set()

    def unregister_data(self, path: str) -> None:
        with self._lock:
            self._data.pop(path, None)

    # -- child watches ------------------------------------------------------------------------

    def register_child(self, handler: ZNodeChildChangeHandler) -> None:
        """Register (replacing any handler on that path).

        kazoo's ChildrenWatch stops when its znode disappears, so an existence watch restarts it
        whenever the znode is (re-)created; the children found then count as a change.
        """
        token = next(self._tokens)
        with self._lock:
            self._child[handler.path] = (token, handler)
        generation = itertools.count(1)
        current_gen = [0]

        def start_children_watch(fire_initial: bool) -> None:
            gen = current_gen[0] = next(generation)
            first = [True]

            def on_children(_children: list[str], _event: Any = None) -> bool | None:
                if not self._current(self._child, handler.path, token) or gen != current_gen[0]:
                    return False
                if first[0]:
                    first[0] = False
                    if not fire_initial:
                        return None
                _safely(f"handle_child_change of {handler.path}", handler.handle_child_change)
                return None

            ChildrenWatch(self._zk, handler.path, on_children, send_event=True)

        # czxid of the znode incarnation being watched; "initial" until the first callback,
        # whose children already existed before registration and so are no change.
        state: dict[str, Any] = {"czxid": None, "initial": True}

        def on_existence(_data: bytes | None, stat: ZnodeStat | None, _event: Any = None) -> bool | None:
            if not self._current(self._child, handler.path, token):
                return False
            initial, state["initial"] = state["initial"], False
            if stat is None:
                state["czxid"] = None
            elif stat.czxid != state["czxid"]:
                state["czxid"] = stat.czxid
                start_children_watch(fire_initial=not initial)
            return None

        DataWatch(self._zk, handler.path, on_existence)

    def unregister_child(self, path: str) -> None:
        with self._lock:
            self._child.pop(path, None)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._child.clear()

    def _current(self, table: dict[str, tuple[int, Any]], path: str, token: int) -> bool:
        with self._lock:
            entry = table.get(path)
        return entry is not None and entry[0] == token
