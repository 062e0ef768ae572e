"""ElectLeaders (43) in the controller: Kafka 2.8's processReplicaLeaderElection for an
AdminClientTriggered request, preferred or unclean. Called on the event thread.

Each requested partition ends in exactly one outcome, as Kafka answers it: the new leader; or
ELECTION_NOT_NEEDED (preferred: the preferred replica leads already; unclean: a live leader
exists); UNKNOWN_TOPIC_OR_PARTITION; INVALID_TOPIC_EXCEPTION while its topic is being deleted;
PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE when the election found no
leader; NOT_CONTROLLER when this broker is not the active controller.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkapy.protocol.constants import NO_LEADER
from kafkapy.protocol.errors import (
    ControllerMovedException,
    ElectionNotNeededException,
    EligibleLeadersNotAvailableException,
    InvalidTopicException,
    KafkaError,
    NotControllerException,
    PreferredLeaderNotAvailableException,
    UnknownServerException,
    UnknownTopicOrPartitionException,
)
from kafkapy.server.controller import events as ev
from kafkapy.server.controller.election import ElectionStrategy
from kafkapy.server.controller.errors import StateChangeFailedException
from kafkapy.server.controller.leader_and_isr import LeaderAndIsr, TopicPartition
from kafkapy.server.controller.states import PartitionState

if TYPE_CHECKING:
    from kafkapy.server.controller.preferred_election import PreferredReplicaElection
    from kafkapy.server.controller.services import ControllerServices, EventRoutes

TRIGGER = "AdminClientTriggered"
Outcomes = dict[TopicPartition, int | Exception]


class LeaderElections:
    """ElectLeaders requests; preferred elections go through PreferredReplicaElection."""

    def __init__(self, services: ControllerServices, preferred: PreferredReplicaElection) -> None:
        self._preferred = preferred
        self._context = services.context
        self._is_active = services.is_active
        self._log = services.log
        self._partition_state_machine = services.partition_state_machine

    def register(self, routes: EventRoutes) -> None:
        routes.on(ev.ElectLeaders, self.process_elect_leaders)

    def process_elect_leaders(self, e: ev.ElectLeaders) -> None:
        if e.future.done():
            return
        if not self._is_active():
            e.future.set_exception(
                NotControllerException("This is not the correct controller for this cluster.")
            )
            return
        try:
            e.future.set_result(self.elect_leaders(e.election_type, e.partitions))
        except ControllerMovedException as moved:
            # A fenced ZooKeeper write: the client must ask the new controller; the controller resigns.
            e.future.set_exception(NotControllerException(str(moved)))
            raise
        except Exception as failed:  # noqa: BLE001 - the request fails, the controller keeps running
            e.future.set_exception(failed)
            raise

    def elect_leaders(
        self, election_type: ev.ElectionType, requested: frozenset[TopicPartition] | None
    ) -> Outcomes:
        ctx = self._context
        kind = election_type.name
        known = set(ctx.all_partitions)
        partitions = known if requested is None else set(requested)
        outcomes: Outcomes = {}
        for tp in sorted(partitions - known):
            self._log.info(
                f"Skipping replica leader election ({kind}) for partition {tp} by {TRIGGER} since it doesn't exist."
            )
            outcomes[tp] = UnknownTopicOrPartitionException("The partition does not exist.")
        deleting = sorted(tp for tp in partitions & known if ctx.is_topic_queued_up_for_deletion(tp.topic))
        if deleting:
            self._log.warning(
                f"Skipping replica leader election ({kind}) for partitions {deleting} by {TRIGGER} "
                f"since the respective topics are being deleted"
            )
        for tp in deleting:
            outcomes[tp] = InvalidTopicException("The topic is being deleted")
        electable: list[TopicPartition] = []
        for tp in sorted((partitions & known) - set(deleting)):
            if self._election_needed(election_type, tp):
                electable.append(tp)
            else:
                outcomes[tp] = ElectionNotNeededException("Leader election not needed for topic partition.")
        if election_type is ev.ElectionType.PREFERRED:
            results = self._preferred.on_replica_election(electable, TRIGGER, remove_request=False)
        else:
            results = self._unclean_election(electable)
        for tp in electable:
            outcomes[tp] = _outcome(election_type, results.get(tp))
        return outcomes

    def _election_needed(self, election_type: ev.ElectionType, tp: TopicPartition) -> bool:
        info = self._context.partition_leadership_info.get(tp)
        leader = NO_LEADER if info is None else info.leader_and_isr.leader
        if election_type is ev.ElectionType.PREFERRED:
            return leader != self._context.partition_replica_assignment(tp)[0]
        # Unclean: only a partition without a live leader; a led partition never loses data to it.
        return leader == NO_LEADER or leader not in self._context.live_broker_ids

    def _unclean_election(
        self, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, LeaderAndIsr | Exception]:
        if not partitions:
            return {}
        self._log.info(
            f"Starting replica leader election (UNCLEAN) for partitions {','.join(map(str, partitions))} "
            f"triggered by {TRIGGER}"
        )
        results = self._partition_state_machine.handle_state_changes(
            partitions, PartitionState.ONLINE, ElectionStrategy.OFFLINE_UNCLEAN
        )
        for tp, outcome in results.items():
            if isinstance(outcome, ControllerMovedException):
                raise outcome
            if isinstance(outcome, Exception):
                self._log.error(
                    f"Error completing replica leader election (UNCLEAN) for partition {tp}: {outcome}"
                )
        return results


def _outcome(election_type: ev.ElectionType, result: LeaderAndIsr | Exception | None) -> int | Exception:
    if isinstance(result, LeaderAndIsr):
        return result.leader
    if result is None or isinstance(result, StateChangeFailedException):
        message = "" if result is None else str(result)
        if election_type is ev.ElectionType.PREFERRED:
            return PreferredLeaderNotAvailableException(message)
        return EligibleLeadersNotAvailableException(message)
    if isinstance(result, KafkaError):
        return result
    return UnknownServerException(str(result))
