"""What the active controller's event handlers work with, and how events reach them.

`ControllerServices` bundles the controller's own parts (its context, its ZooKeeper view, the
state machines, the outgoing request batch, the event queue) so that the handler classes in
broker_events.py, topic_events.py, preferred_election.py, elect_leaders.py and reassignment.py
take them at construction instead of taking the KafkaController: the handlers sit below the
controller in the import graph, and the controller wires them together (kafka_controller.py).

`EventRoutes` is the dispatch table `KafkaController.process` reads: each handler class
registers the event types it handles.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar, cast

from kafkapy.server.controller.channel_manager import ControllerChannelManager
from kafkapy.server.controller.controller_config import ControllerConfig
from kafkapy.server.controller.controller_context import ControllerContext
from kafkapy.server.controller.events import ControllerEvent
from kafkapy.server.controller.leader_and_isr import TopicPartition
from kafkapy.server.controller.partition_state_machine import PartitionStateMachine
from kafkapy.server.controller.replica_state_machine import ReplicaStateMachine
from kafkapy.server.controller.request_batch import ControllerBrokerRequestBatch
from kafkapy.server.controller.state_change_log import ControllerLogger
from kafkapy.server.controller.topic_deletion_manager import TopicDeletionManager
from kafkapy.server.controller.zk_interface import ControllerZk

E = TypeVar("E", bound=ControllerEvent)
EventHandler = Callable[[ControllerEvent], None]


@dataclass(frozen=True, slots=True)
class ControllerServices:
    broker_id: int
    config: ControllerConfig
    context: ControllerContext
    zk: ControllerZk
    log: ControllerLogger
    batch: ControllerBrokerRequestBatch
    channel_manager: ControllerChannelManager
    replica_state_machine: ReplicaStateMachine
    partition_state_machine: PartitionStateMachine
    topic_deletion_manager: TopicDeletionManager
    # Queue a follow-up event (watches and timers fire off the event thread).
    put: Callable[[ControllerEvent], None]
    # Whether this broker is the active controller now; handlers of watch-triggered events
    # do nothing otherwise (the watch may have fired just before a resignation).
    is_active: Callable[[], bool]

    def send_update_metadata_request(
        self, broker_ids: Iterable[int], partitions: Iterable[TopicPartition]
    ) -> None:
        try:
            self.batch.new_batch()
            self.batch.add_update_metadata_request_for_brokers(list(broker_ids), list(partitions))
            self.batch.send_requests_to_brokers(self.context.epoch)
        except Exception as e:  # noqa: BLE001
            self.log.error("Error sending UpdateMetadata requests", e)
            self.batch.clear()


class EventRoutes:
    """Event type -> the handler the event thread calls for it."""

    def __init__(self) -> None:
        self._routes: dict[type[ControllerEvent], EventHandler] = {}

    def on(self, event_type: type[E], handler: Callable[[E], object]) -> None:
        """Route `event_type` to `handler`; what the handler returns is ignored."""
        if event_type in self._routes:
            raise ValueError(f"{event_type.__name__} already has a handler")

        def dispatch(event: ControllerEvent) -> None:
            # Routes are looked up by type(event), so the event is an E here.
            handler(cast(E, event))

        self._routes[event_type] = dispatch

    def get(self, event_type: type[ControllerEvent]) -> EventHandler | None:
        return self._routes.get(event_type)
