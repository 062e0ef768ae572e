"""KafkaController: the ZooKeeper-era controller, one event queue processed by one thread.

Every broker runs one; the broker that creates the ephemeral /controller is active. Lifecycle and
election live here; what happens on each cluster event lives in handler classes (BrokerEvents,
TopicEvents, PreferredReplicaElection, LeaderElections, PartitionReassignments) built here from
the controller's parts (ControllerServices) and registered in one dispatch table (EventRoutes).
`process` runs them one event at a time on the event thread, so no controller state needs a lock;
the handlers never see this class, so they import nothing above them.

The broker uses: KafkaController(config, zk_client, broker_info, broker_epoch), startup(),
shutdown(), is_active(), controller_id / active_controller_id, epoch, and
controlled_shutdown(broker_id, broker_epoch) -> Future[set[TopicPartition]].
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any

from kafkapy.protocol.errors import ControllerMovedException, NotControllerException
from kafkapy.server.controller import events as ev
from kafkapy.server.controller.broker_events import BrokerEvents
from kafkapy.server.controller.channel_manager import (
    ConnectionFactory,
    ControllerChannelManager,
    default_connection_factory,
)
from kafkapy.server.controller.controller_config import ControllerConfig
from kafkapy.server.controller.controller_context import ControllerContext
from kafkapy.server.controller.elect_leaders import LeaderElections
from kafkapy.server.controller.event_manager import ControllerEventManager
from kafkapy.server.controller.leader_and_isr import ReplicaAssignment, TopicPartition
from kafkapy.server.controller.partition_state_machine import PartitionStateMachine
from kafkapy.server.controller.preferred_election import PreferredReplicaElection
from kafkapy.server.controller.reassignment import PartitionReassignments
from kafkapy.server.controller.replica_state_machine import ReplicaStateMachine
from kafkapy.server.controller.request_batch import ControllerBrokerRequestBatch
from kafkapy.server.controller.services import ControllerServices, EventRoutes
from kafkapy.server.controller.state_change_log import ControllerLogger
from kafkapy.server.controller.topic_deletion_manager import TopicDeletionManager
from kafkapy.server.controller.topic_events import TopicEvents
from kafkapy.server.controller.zk_interface import ControllerZk
from kafkapy.server.controller.zk_store import ZkControllerStore
from kafkapy.server.metrics.controller_state import IDLE, STATE_BY_EVENT
from kafkapy.zk.watchers import StateChangeHandler

# ZooKeeper paths the active controller watches (Kafka's ZkData names them the same).
BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
DELETE_TOPICS = "/admin/delete_topics"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
CONTROLLER = "/controller"


class KafkaController:
    def __init__(
        self,
        config: Any,
        zk_client: Any,
        broker_info: Any,
        broker_epoch: int = -1,
        *,
        register_broker: Callable[[], int] | None = None,
        connection_factory: ConnectionFactory = default_connection_factory,
    ) -> None:
        self.config = ControllerConfig.from_kafka_config(config)
        # The registered id wins over broker.id: with broker.id.generation the config says -1.
        self.broker_id: int = broker_info.id
        self.broker_info = broker_info
        self.broker_epoch = broker_epoch
        self._zk_client = zk_client
        # Tests pass a ControllerZk directly; the broker passes its KafkaZkClient.
        self.zk: ControllerZk = (
            zk_client if hasattr(zk_client, "watch_node") else ZkControllerStore(zk_client)
        )
        # Re-registers /brokers/ids/<id> after a session expiry; None when the broker does it itself.
        self._register_broker = register_broker
        self.log = ControllerLogger(f"[Controller id={self.broker_id}] ")

        self.context = ControllerContext()
        self.event_manager = ControllerEventManager(self.broker_id, self)
        self.channel_manager = ControllerChannelManager(
            self.broker_id,
            self.config.inter_broker_listener_name,
            self.config.controller_socket_timeout_ms,
            connection_factory,
        )
        self.batch = ControllerBrokerRequestBatch(
            self.broker_id,
            self.context,
            self.channel_manager.send_request,
            self.event_manager.put,
            self.config.inter_broker_listener_name,
        )
        self.replica_state_machine = ReplicaStateMachine(self.broker_id, self.context, self.zk, self.batch)
        self.partition_state_machine = PartitionStateMachine(
            self.broker_id,
            self.context,
            self.zk,
            self.batch,
            lambda: self.config.unclean_leader_election_enable,
        )
        self.topic_deletion_manager = TopicDeletionManager(
            self.broker_id,
            self.context,
            self.zk,
            self.replica_state_machine,
            self.partition_state_machine,
            lambda partitions: self.services.send_update_metadata_request(
                self.context.live_or_shutting_down_broker_ids, partitions
            ),
            self.config.delete_topic_enable,
            on_topic_deleted=lambda topic: self.zk.unwatch(f"{TOPICS}/{topic}"),
        )
        # Written only by the event thread; read by API handlers (a plain int read is atomic).
        self._active_controller_id = -1
        self.controller_state = IDLE  # read by the metrics thread
        self._session_handler: _SessionHandler | None = None
        # Set once this broker's first election is decided (it won, or /controller names another):
        # the broker serves clients after it, so that none is told "no controller".
        self._election_decided = threading.Event()
        self.services = ControllerServices(
            broker_id=self.broker_id,
            config=self.config,
            context=self.context,
            zk=self.zk,
            log=self.log,
            batch=self.batch,
            channel_manager=self.channel_manager,
            replica_state_machine=self.replica_state_machine,
            partition_state_machine=self.partition_state_machine,
            topic_deletion_manager=self.topic_deletion_manager,
            put=self.put,
            is_active=self.is_active,
        )
        # The event handlers, each given the collaborators it calls; none of them sees this class.
        self.topics = TopicEvents(self.services)
        self.reassignments = PartitionReassignments(self.services)
        self.brokers = BrokerEvents(self.services, self.topics, self.reassignments)
        self.preferred_election = PreferredReplicaElection(self.services)
        self.leader_elections = LeaderElections(self.services, self.preferred_election)
        self._routes = EventRoutes()
        self._routes.on(ev.Startup, lambda _e: self._process_startup())
        self._routes.on(ev.ControllerChange, lambda _e: self._maybe_resign())
        self._routes.on(ev.Reelect, lambda _e: self._process_reelect())
        self._routes.on(ev.Expire, lambda _e: self._process_expire())
        self._routes.on(ev.RegisterBrokerAndReelect, lambda _e: self._process_register_broker_and_reelect())
        for handlers in (
            self.brokers,
            self.topics,
            self.preferred_election,
            self.leader_elections,
            self.reassignments,
        ):
            handlers.register(self._routes)

    # --- public API --------------------------------------------------------------------------------

    def startup(self) -> None:
        self._session_handler = _SessionHandler(self)
        register = getattr(self._zk_client, "register_state_change_handler", None)
        if register is not None:
            register(self._session_handler)
        self.event_manager.put(ev.Startup())
        self.event_manager.start()

    def await_election(self, timeout: float) -> bool:
        """Blocking: wait until the first election is decided (this broker knows the controller
        from /controller, or is it; its failover may still be running). False on timeout."""
        return self._election_decided.wait(timeout)

    def shutdown(self) -> None:
        unregister = getattr(self._zk_client, "unregister_state_change_handler", None)
        if unregister is not None and self._session_handler is not None:
            unregister(self._session_handler.name)
        self.event_manager.close()
        # The event thread has stopped: resigning here cannot race with event processing.
        self._on_controller_resignation()
        self.zk.unwatch(CONTROLLER)

    def is_active(self) -> bool:
        return self._active_controller_id == self.broker_id

    @property
    def active_controller_id(self) -> int:
        """The controller as this broker last saw it, -1 if none."""
        return self._active_controller_id

    controller_id = active_controller_id

    @property
    def epoch(self) -> int:
        return self.context.epoch

    def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> Future[set[TopicPartition]]:
        """Move leadership off `broker_id`; the future holds the partitions it still leads (empty
        once it may stop), or the error (ControllerMovedException, StaleBrokerEpochException, ...)."""
        event = ev.ControlledShutdown(broker_id, broker_epoch)
        self.event_manager.put(event)
        return event.future

    def alter_partition_reassignments(
        self, reassignments: Mapping[TopicPartition, tuple[int, ...] | None]
    ) -> Future[dict[TopicPartition, Exception | None]]:
        """KIP-455: start (or, with None, cancel) reassignments; the future holds each partition's error."""
        event = ev.ApiPartitionReassignment(dict(reassignments))
        self.event_manager.put(event)
        return event.future

    def list_partition_reassignments(
        self, partitions: frozenset[TopicPartition] | None
    ) -> Future[dict[TopicPartition, ReplicaAssignment]]:
        event = ev.ListPartitionReassignments(partitions)
        self.event_manager.put(event)
        return event.future

    def elect_leaders(
        self, election_type: ev.ElectionType, partitions: frozenset[TopicPartition] | None
    ) -> Future[dict[TopicPartition, int | Exception]]:
        """ElectLeaders (43): each partition's new leader or error; None elects over every partition."""
        event = ev.ElectLeaders(election_type, partitions)
        self.event_manager.put(event)
        return event.future

    def put(self, event: ev.ControllerEvent) -> None:
        self.event_manager.put(event)

    # --- EventProcessor ----------------------------------------------------------------------------

    def process(self, event: ev.ControllerEvent) -> None:
        handler = self._routes.get(type(event))
        if handler is None:
            self.log.error(f"Unknown controller event {event}")
            return
        # The ControllerState gauge: what the event thread is doing now (Idle between events).
        self.controller_state = STATE_BY_EVENT.get(type(event).__name__, IDLE)
        try:
            handler(event)
        except ControllerMovedException as e:
            # Some ZooKeeper write was fenced: another controller exists. Step down.
            self.log.info(f"Controller moved to another broker when processing {event.name}: {e}")
            self._maybe_resign()
        except Exception as e:  # noqa: BLE001
            self.log.error(f"Error processing event {event}", e)
        finally:
            self.controller_state = IDLE

    def preempt(self, event: ev.ControllerEvent) -> None:
        if isinstance(event, ev.ControlledShutdown) and not event.future.done():
            event.future.set_exception(ControllerMovedException("Controller moved to another broker"))
        elif (
            isinstance(event, ev.ApiPartitionReassignment | ev.ListPartitionReassignments | ev.ElectLeaders)
            and not event.future.done()
        ):
            event.future.set_exception(
                NotControllerException("This is not the correct controller for this cluster.")
            )

    # --- election ----------------------------------------------------------------------------------

    def _process_startup(self) -> None:
        try:
            self.zk.watch_node(
                CONTROLLER, lambda: self.put(ev.ControllerChange()), on_delete=lambda: self.put(ev.Reelect())
            )
            self._elect()
        finally:
            self._election_decided.set()  # even if it failed: start-up must not wait in vain

    def _process_reelect(self) -> None:
        self._maybe_resign()
        self._elect()

    def _process_expire(self) -> None:
        self._active_controller_id = -1
        self._on_controller_resignation()

    def _process_register_broker_and_reelect(self) -> None:
        if self._register_broker is not None:
            self.broker_epoch = self._register_broker()
        self._process_reelect()

    def _maybe_resign(self) -> None:
        was_active = self.is_active()
        self.zk.watch_node(
            CONTROLLER, lambda: self.put(ev.ControllerChange()), on_delete=lambda: self.put(ev.Reelect())
        )
        self._active_controller_id = _or_minus_one(self.zk.get_controller_id())
        if was_active and not self.is_active():
            self._on_controller_resignation()

    def _elect(self) -> None:
        self._active_controller_id = _or_minus_one(self.zk.get_controller_id())
        if self._active_controller_id != -1:
            self._election_decided.set()
            self.log.debug(
                f"Broker {self._active_controller_id} has been elected as the controller, "
                f"so stopping the election process."
            )
            return
        try:
            epoch, epoch_zk_version = self.zk.register_controller_and_increment_epoch(self.broker_id)
            self.context.epoch = epoch
            self.context.epoch_zk_version = epoch_zk_version
            self._active_controller_id = self.broker_id
            self._election_decided.set()
            self.log.info(
                f"{self.broker_id} successfully elected as the controller. Epoch incremented to "
                f"{epoch} and epoch zk version is now {epoch_zk_version}"
            )
            self._on_controller_failover()
        except ControllerMovedException:
            self._maybe_resign()
            if self._active_controller_id != -1:
                self.log.debug(
                    f"Broker {self._active_controller_id} was elected as controller instead of "
                    f"broker {self.broker_id}"
                )
            else:
                self.log.warning(
                    "A controller has been elected but just resigned, this will result in "
                    "another round of election"
                )
        except Exception as e:  # noqa: BLE001
            self.log.error(
                f"Error while electing or becoming controller on broker {self.broker_id}. "
                f"Trigger controller movement immediately",
                e,
            )
            self._trigger_controller_move()

    def _trigger_controller_move(self) -> None:
        epoch_zk_version = self.context.epoch_zk_version
        self._on_controller_resignation()
        self._active_controller_id = -1
        delete = getattr(self.zk, "delete_controller", None)
        if delete is not None:
            delete(epoch_zk_version)

    def _on_controller_failover(self) -> None:
        self.log.info("Registering handlers")
        self.zk.watch_children(BROKER_IDS, lambda: self.put(ev.BrokerChange()))
        self.zk.watch_children(TOPICS, lambda: self.put(ev.TopicChange()))
        self.zk.watch_children(DELETE_TOPICS, lambda: self.put(ev.TopicDeletion()))
        self.zk.watch_children(ISR_CHANGE_NOTIFICATION, lambda: self.put(ev.IsrChangeNotification()))
        self.zk.watch_children(LOG_DIR_EVENT_NOTIFICATION, lambda: self.put(ev.LogDirEventNotification()))
        self.zk.watch_node(PREFERRED_REPLICA_ELECTION, lambda: self.put(ev.ReplicaLeaderElection()))
        # Deletion is this controller's own doing once a reassignment completes: nothing to do.
        self.zk.watch_node(
            REASSIGN_PARTITIONS, lambda: self.put(ev.ZkPartitionReassignment()), on_delete=lambda: None
        )
        # A failover sends LeaderAndIsr to every broker, which finds offline replicas anyway.
        self.log.info("Deleting log dir event notifications")
        self.zk.delete_log_dir_event_notifications(None, self.context.epoch_zk_version)
        self.log.info("Deleting isr change notifications")
        self.zk.delete_isr_change_notifications(None, self.context.epoch_zk_version)
        self.log.info("Initializing controller context")
        self.brokers.initialize_controller_context()
        self.reassignments.load_reassignments_in_progress()
        self.log.info("Fetching topic deletions in progress")
        to_delete, ineligible = self.topics.fetch_topic_deletions_in_progress()
        self.log.info("Initializing topic deletion manager")
        self.topic_deletion_manager.init(to_delete, ineligible)
        # Brokers need the live broker list before the LeaderAndIsr requests the state machines send.
        self.log.info("Sending update metadata request")
        self.services.send_update_metadata_request(self.context.live_or_shutting_down_broker_ids, [])
        self.replica_state_machine.startup()
        self.partition_state_machine.startup()
        self.log.info(f"Ready to serve as the new controller with epoch {self.context.epoch}")
        self.reassignments.initialize_reassignments()
        self.topic_deletion_manager.try_topic_deletion()
        self.preferred_election.process_replica_leader_election(ev.ReplicaLeaderElection())
        if self.config.auto_leader_rebalance_enable:
            self.log.info("Starting the controller scheduler")
            self.preferred_election.schedule_auto_leader_rebalance(self.config.first_rebalance_delay_seconds)

    def _on_controller_resignation(self) -> None:
        self.log.debug("Resigning")
        for path in (
            ISR_CHANGE_NOTIFICATION,
            LOG_DIR_EVENT_NOTIFICATION,
            REASSIGN_PARTITIONS,
            PREFERRED_REPLICA_ELECTION,
            DELETE_TOPICS,
            TOPICS,
            BROKER_IDS,
        ):
            self.zk.unwatch(path)
        for topic in self.context.all_topics:
            self.zk.unwatch(f"{TOPICS}/{topic}")
        for broker_id in self.context.live_or_shutting_down_broker_ids:
            self.zk.unwatch(f"{BROKER_IDS}/{broker_id}")
        self.preferred_election.cancel_auto_leader_rebalance()
        self.reassignments.on_resignation()
        self.topic_deletion_manager.reset()
        self.replica_state_machine.shutdown()
        self.partition_state_machine.shutdown()
        self.batch.clear()
        self.channel_manager.shutdown()
        self.context.reset()
        self.log.info("Resigned")


class _SessionHandler(StateChangeHandler):
    """ZooKeeper session lifecycle, called on the zk client's session thread."""

    def __init__(self, controller: KafkaController) -> None:
        super().__init__("controller-state-change-handler")
        self._controller = controller

    def before_initializing_session(self) -> None:
        # Drop pending work and wait until the controller has resigned, so nothing written under
        # the old session's assumptions happens after the new session starts.
        queued = self._controller.event_manager.clear_and_put(ev.Expire())
        queued.await_processing(timeout=60)

    def after_initializing_session(self) -> None:
        self._controller.put(ev.RegisterBrokerAndReelect())


def _or_minus_one(value: int | None) -> int:
    return -1 if value is None else value
