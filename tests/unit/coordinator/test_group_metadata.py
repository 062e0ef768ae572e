"""The group state machine's transition table and protocol selection."""

from __future__ import annotations

import itertools

import pytest

from kafkapy.protocol.consumer_protocol import encode_subscription
from kafkapy.server.coordinator.group_metadata import (
    VALID_PREVIOUS_STATES,
    GroupMetadata,
    GroupState,
    IllegalGroupStateTransition,
)
from kafkapy.server.coordinator.member_metadata import MemberMetadata

S = GroupState
KAFKA_TRANSITIONS = {
    (S.PREPARING_REBALANCE, S.EMPTY),
    (S.EMPTY, S.PREPARING_REBALANCE),
    (S.STABLE, S.PREPARING_REBALANCE),
    (S.COMPLETING_REBALANCE, S.PREPARING_REBALANCE),
    (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE),
    (S.COMPLETING_REBALANCE, S.STABLE),
    *((s, S.DEAD) for s in GroupState),
}


@pytest.mark.parametrize(("source", "target"), list(itertools.product(GroupState, GroupState)))
def test_transitions_follow_kafkas_table(source: GroupState, target: GroupState) -> None:
    group = GroupMetadata("g", source)
    if (source, target) in KAFKA_TRANSITIONS:
        group.transition_to(target)
        assert group.state == target
    else:
        with pytest.raises(IllegalGroupStateTransition, match=f"Instead it is in {source.value} state"):
            group.transition_to(target)
        assert group.state == source  # unchanged


def test_table_names_every_state() -> None:
    assert set(VALID_PREVIOUS_STATES) == set(GroupState)


def member(member_id: str, *protocols: str) -> MemberMetadata:
    return MemberMetadata(
        member_id,
        "g",
        None,
        "c",
        "/h",
        1000,
        1000,
        "consumer",
        [(p, encode_subscription(["t"])) for p in protocols],
    )


def test_protocol_selection_is_a_vote_among_common_protocols() -> None:
    group = GroupMetadata("g", S.PREPARING_REBALANCE)
    group.add(member("a", "roundrobin", "range"))
    group.add(member("b", "range", "roundrobin"))
    group.add(member("c", "range", "sticky"))
    assert group.select_protocol() == "range"
    assert group.supports_protocols("consumer", ["range"])
    assert not group.supports_protocols("consumer", ["sticky"])
    assert not group.supports_protocols("connect", ["range"])


def test_first_member_is_leader_and_leadership_moves_on_removal() -> None:
    group = GroupMetadata("g")
    group.add(member("a", "range"))
    group.add(member("b", "range"))
    assert group.leader_id == "a"
    group.remove("a")
    assert group.leader_id == "b"
    group.remove("b")
    assert group.leader_id is None


def test_next_generation_of_an_empty_group_is_empty() -> None:
    group = GroupMetadata("g", S.PREPARING_REBALANCE)
    group.init_next_generation()
    assert (group.state, group.generation_id, group.protocol_name) == (S.EMPTY, 1, None)


def test_subscribed_topics_come_from_the_consumer_subscriptions() -> None:
    group = GroupMetadata("g", S.PREPARING_REBALANCE)
    group.add(member("a", "range"))
    group.init_next_generation()
    assert group.subscribed_topics() == {"t"}
