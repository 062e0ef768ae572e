"""ElectLeaders (43) over the AdminClient: what Kafka's Admin.electLeaders gives the
leader-election tool. The request goes to the controller (NOT_CONTROLLER: ask the new one)."""

from __future__ import annotations

from collections.abc import Iterable

from kafkapy.client.admin import AdminClient, raise_for_error
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import KafkaError, UnsupportedVersionException
from kafkapy.protocol.generated.elect_leaders_request import ElectLeadersRequest, TopicPartitions
from kafkapy.server.controller.events import ElectionType


def elect_leaders(
    admin: AdminClient, election_type: ElectionType, partitions: Iterable[TopicPartition] | None
) -> dict[TopicPartition, KafkaError | None]:
    """Each partition's error, None where a leader was elected; `partitions` None: all of them."""
    grouped: dict[str, list[int]] = {}
    for tp in sorted(partitions or ()):
        grouped.setdefault(tp.topic, []).append(tp.partition)
    body = ElectLeadersRequest(
        election_type=int(election_type),
        topic_partitions=None
        if partitions is None
        else [TopicPartitions(topic=t, partitions=ps) for t, ps in grouped.items()],
        timeout_ms=admin.timeout_ms,
    )

    def build(version: int) -> ElectLeadersRequest:
        if version == 0 and election_type is not ElectionType.PREFERRED:
            # v0 has no election type: the broker would run a preferred election instead.
            raise UnsupportedVersionException(
                "The broker does not support unclean leader election (ElectLeaders v0)"
            )
        return body

    answer = admin.controller_call(
        ApiKey.ELECT_LEADERS,
        "electLeaders",
        build,
        lambda a: (
            [(a.error_code, None)]
            + [
                (p.error_code, p.error_message)
                for t in a.replica_election_results
                for p in t.partition_result
            ]
        ),
    )
    raise_for_error(answer.error_code)
    results: dict[TopicPartition, KafkaError | None] = {}
    for t in answer.replica_election_results:
        for p in t.partition_result:
            try:
                raise_for_error(p.error_code, p.error_message)
                results[TopicPartition(t.topic, p.partition_id)] = None
            except KafkaError as e:
                results[TopicPartition(t.topic, p.partition_id)] = e
    return results
