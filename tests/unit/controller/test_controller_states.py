"""The partition and replica state tables (Kafka's validPreviousStates)."""

import pytest

from kafkapy.server.controller.states import PartitionState as P
from kafkapy.server.controller.states import ReplicaState as R
from kafkapy.server.controller.states import is_valid_transition

PARTITION_VALID = {
    (P.NON_EXISTENT, P.NEW),
    (P.NEW, P.ONLINE),
    (P.ONLINE, P.ONLINE),
    (P.OFFLINE, P.ONLINE),
    (P.NEW, P.OFFLINE),
    (P.ONLINE, P.OFFLINE),
    (P.OFFLINE, P.OFFLINE),
    (P.OFFLINE, P.NON_EXISTENT),
}

REPLICA_VALID = {
    (R.NON_EXISTENT, R.NEW),
    *((s, R.ONLINE) for s in (R.NEW, R.ONLINE, R.OFFLINE, R.REPLICA_DELETION_INELIGIBLE)),
    *((s, R.OFFLINE) for s in (R.NEW, R.ONLINE, R.OFFLINE, R.REPLICA_DELETION_INELIGIBLE)),
    (R.OFFLINE, R.REPLICA_DELETION_STARTED),
    (R.REPLICA_DELETION_STARTED, R.REPLICA_DELETION_SUCCESSFUL),
    (R.OFFLINE, R.REPLICA_DELETION_INELIGIBLE),
    (R.REPLICA_DELETION_STARTED, R.REPLICA_DELETION_INELIGIBLE),
    (R.REPLICA_DELETION_SUCCESSFUL, R.NON_EXISTENT),
}


@pytest.mark.parametrize("current", list(P))
@pytest.mark.parametrize("target", list(P))
def test_partition_transition_table(current, target):
    assert is_valid_transition(current, target) == ((current, target) in PARTITION_VALID)


@pytest.mark.parametrize("current", list(R))
@pytest.mark.parametrize("target", list(R))
def test_replica_transition_table(current, target):
    assert is_valid_transition(current, target) == ((current, target) in REPLICA_VALID)


def test_states_print_as_kafka_names_them():
    assert str(P.ONLINE) == "OnlinePartition"
    assert str(R.REPLICA_DELETION_STARTED) == "ReplicaDeletionStarted"
