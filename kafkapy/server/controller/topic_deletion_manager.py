"""TopicDeletionManager: Kafka's topic deletion flow, driven by controller events.

1. /admin/delete_topics/<t> appears -> the topic is queued (`enqueue_topics_for_deletion`).
2. Once per topic, its partitions go Offline -> NonExistent and every broker gets UpdateMetadata
   saying leader -2 ("being deleted") so clients stop using it.
3. Replicas on live brokers go Offline -> ReplicaDeletionStarted: StopReplica(delete=true).
   Replicas on dead brokers become ReplicaDeletionIneligible and the topic waits for them.
4. Each StopReplica response moves replicas to ReplicaDeletionSuccessful (or Ineligible on error,
   retried later). When all replicas are Successful the topic's znodes are removed, including
   /admin/delete_topics/<t>, and the controller forgets it.
With delete.topic.enable=false the admin znode is removed and nothing else happens.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kafkapy.server.controller.controller_context import ControllerContext
from kafkapy.server.controller.leader_and_isr import PartitionAndReplica, TopicPartition
from kafkapy.server.controller.partition_state_machine import PartitionStateMachine
from kafkapy.server.controller.replica_state_machine import ReplicaStateMachine
from kafkapy.server.controller.state_change_log import ControllerLogger
from kafkapy.server.controller.states import PartitionState, ReplicaState
from kafkapy.server.controller.zk_interface import ControllerZk

R = ReplicaState


class TopicDeletionManager:
    def __init__(
        self,
        controller_id: int,
        context: ControllerContext,
        zk: ControllerZk,
        replica_state_machine: ReplicaStateMachine,
        partition_state_machine: PartitionStateMachine,
        send_metadata_update: Callable[[list[TopicPartition]], None],
        delete_topic_enable: bool,
        on_topic_deleted: Callable[[str], None] = lambda topic: None,
    ) -> None:
        self.context = context
        self.zk = zk
        self.replica_sm = replica_state_machine
        self.partition_sm = partition_state_machine
        self._send_metadata_update = send_metadata_update
        self.delete_topic_enable = delete_topic_enable
        # Lets the controller stop watching the topic's znode before it disappears.
        self._on_topic_deleted = on_topic_deleted
        self.log = ControllerLogger(f"[Topic Deletion Manager {controller_id}] ")

    def init(self, topics_to_delete: Iterable[str], topics_ineligible: Iterable[str]) -> None:
        topics_to_delete = set(topics_to_delete)
        self.log.info(
            f"Initializing manager with initial deletions: {sorted(topics_to_delete)}, "
            f"initial ineligible deletions: {sorted(set(topics_ineligible))}"
        )
        if self.delete_topic_enable:
            self.context.queue_topic_deletion(topics_to_delete)
            self.context.topics_ineligible_for_deletion.update(
                set(topics_ineligible) & self.context.topics_to_be_deleted
            )
        else:
            self.log.info(f"Removing {sorted(topics_to_delete)} since delete topic is disabled")
            self.zk.delete_topic_deletions(topics_to_delete, self.context.epoch_zk_version)

    def try_topic_deletion(self) -> None:
        if self.delete_topic_enable:
            self._resume_deletions()

    def enqueue_topics_for_deletion(self, topics: Iterable[str]) -> None:
        if self.delete_topic_enable:
            self.context.queue_topic_deletion(topics)
            self._resume_deletions()

    def resume_deletion_for_topics(self, topics: Iterable[str]) -> None:
        if not self.delete_topic_enable:
            return
        to_resume = set(topics) & self.context.topics_to_be_deleted
        self.context.topics_ineligible_for_deletion -= to_resume
        if to_resume:
            self._resume_deletions()

    def fail_replica_deletion(self, replicas: Iterable[PartitionAndReplica]) -> None:
        if not self.delete_topic_enable:
            return
        failed = [r for r in replicas if self.is_topic_queued_up_for_deletion(r.topic)]
        if failed:
            topics = {r.topic for r in failed}
            self.log.debug(
                f"Deletion failed for replicas {','.join(map(str, failed))}. Halting deletion for topics {topics}"
            )
            self.replica_sm.handle_state_changes(failed, R.REPLICA_DELETION_INELIGIBLE)
            self.mark_topic_ineligible_for_deletion(topics, "replica deletion failure")
            self._resume_deletions()

    def mark_topic_ineligible_for_deletion(self, topics: Iterable[str], reason: str) -> None:
        if not self.delete_topic_enable:
            return
        halted = set(topics) & self.context.topics_to_be_deleted
        self.context.topics_ineligible_for_deletion.update(halted)
        if halted:
            self.log.info(f"Halted deletion of topics {','.join(sorted(halted))} due to {reason}")

    def is_topic_ineligible_for_deletion(self, topic: str) -> bool:
        return self.delete_topic_enable and topic in self.context.topics_ineligible_for_deletion

    def is_topic_queued_up_for_deletion(self, topic: str) -> bool:
        return self.delete_topic_enable and topic in self.context.topics_to_be_deleted

    def is_topic_deletion_in_progress(self, topic: str) -> bool:
        return self.delete_topic_enable and self.context.is_topic_deletion_in_progress(topic)

    def complete_replica_deletion(self, replicas: Iterable[PartitionAndReplica]) -> None:
        deleted = [r for r in replicas if self.is_topic_queued_up_for_deletion(r.topic)]
        self.log.debug(f"Deletion successfully completed for replicas {','.join(map(str, deleted))}")
        self.replica_sm.handle_state_changes(deleted, R.REPLICA_DELETION_SUCCESSFUL)
        self._resume_deletions()

    def reset(self) -> None:
        if self.delete_topic_enable:
            self.context.topics_to_be_deleted.clear()
            self.context.topics_with_deletion_started.clear()
            self.context.topics_ineligible_for_deletion.clear()

    # --- the flow --------------------------------------------------------------------------------

    def _is_topic_eligible_for_deletion(self, topic: str) -> bool:
        return (
            self.is_topic_queued_up_for_deletion(topic)
            and not self.is_topic_deletion_in_progress(topic)
            and not self.is_topic_ineligible_for_deletion(topic)
        )

    def _complete_delete_topic(self, topic: str) -> None:
        self._on_topic_deleted(topic)
        deleted = self.context.replicas_in_state(topic, R.REPLICA_DELETION_SUCCESSFUL)
        self.replica_sm.handle_state_changes(deleted, R.NON_EXISTENT)
        self.zk.delete_topic(topic, self.context.epoch_zk_version)
        self.context.remove_topic(topic)

    def _resume_deletions(self) -> None:
        queued = sorted(self.context.topics_to_be_deleted)
        retry: list[str] = []
        eligible: list[str] = []
        if queued:
            self.log.info(f"Handling deletion for topics {','.join(queued)}")
        for topic in queued:
            if self.context.are_all_replicas_in_state(topic, R.REPLICA_DELETION_SUCCESSFUL):
                self._complete_delete_topic(topic)
                self.log.info(f"Deletion of topic {topic} successfully completed")
                continue
            if self.context.is_any_replica_in_state(topic, R.REPLICA_DELETION_STARTED):
                self.log.debug(f"Deletion for replicas of topic {topic} already in progress")
            elif self.context.is_any_replica_in_state(topic, R.REPLICA_DELETION_INELIGIBLE):
                # Ineligible replicas whose brokers are back get another go below.
                retry.append(topic)
            if self._is_topic_eligible_for_deletion(topic):
                self.log.info(f"Deletion of topic {topic} (re)started")
                eligible.append(topic)
        if retry:
            failed = [
                r for t in retry for r in self.context.replicas_in_state(t, R.REPLICA_DELETION_INELIGIBLE)
            ]
            self.log.debug(
                f"Retrying deletion of topics {','.join(retry)} since replicas "
                f"{','.join(map(str, failed))} were not successfully deleted"
            )
            self.replica_sm.handle_state_changes(failed, R.OFFLINE)
        if eligible:
            self._on_topic_deletion(eligible)

    def _on_topic_deletion(self, topics: list[str]) -> None:
        unseen = [t for t in topics if t not in self.context.topics_with_deletion_started]
        if unseen:
            partitions = [tp for t in unseen for tp in self.context.partitions_for_topic(t)]
            self.partition_sm.handle_state_changes(partitions, PartitionState.OFFLINE)
            self.partition_sm.handle_state_changes(partitions, PartitionState.NON_EXISTENT)
            self.context.topics_with_deletion_started.update(unseen)
        # Brokers learn that these partitions are going (leader -2) and stop serving them.
        self._send_metadata_update([tp for t in topics for tp in self.context.partitions_for_topic(t)])
        self._on_partition_deletion(topics)

    def _on_partition_deletion(self, topics: list[str]) -> None:
        dead: list[PartitionAndReplica] = []
        to_retry: list[PartitionAndReplica] = []
        ineligible: set[str] = set()
        for topic in topics:
            replicas = self.context.replicas_for_topic(topic)
            alive = [r for r in replicas if self.context.is_replica_online(r.replica, r.topic_partition)]
            topic_dead = [r for r in replicas if r not in alive]
            succeeded = set(self.context.replicas_in_state(topic, R.REPLICA_DELETION_SUCCESSFUL))
            to_retry.extend(r for r in alive if r not in succeeded)
            dead.extend(topic_dead)
            if topic_dead:
                self.log.debug(f"Dead Replicas ({','.join(map(str, topic_dead))}) found for topic {topic}")
                ineligible.add(topic)
        self.replica_sm.handle_state_changes(dead, R.REPLICA_DELETION_INELIGIBLE)
        self.replica_sm.handle_state_changes(to_retry, R.OFFLINE)
        self.replica_sm.handle_state_changes(to_retry, R.REPLICA_DELETION_STARTED)
        if ineligible:
            self.mark_topic_ineligible_for_deletion(ineligible, "offline replicas")
