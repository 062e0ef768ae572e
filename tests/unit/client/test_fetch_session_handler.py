"""The fetching side of a KIP-227 session: what each request carries, and how answers move it."""

from __future__ import annotations

import pytest

from kafkapy.client.fetch_session_handler import FetchSessionHandler, PartitionData
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.errors import FetchSessionIdNotFoundException, InvalidFetchSessionEpochException

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def data(offset: int) -> PartitionData:
    return PartitionData(offset, 0, 1024, 5)


def test_first_request_is_full_then_only_changes_are_sent() -> None:
    h = FetchSessionHandler(1)
    req = h.build({A0: data(0), A1: data(0)})
    assert (req.session_id, req.epoch, list(req.to_send), req.to_forget) == (0, 0, [A0, A1], [])
    assert h.handle_response(req, 0, 42, [A0, A1])
    req = h.build({A0: data(3), A1: data(0), B0: data(0)})
    assert (req.session_id, req.epoch, list(req.to_send), req.to_forget) == (42, 1, [A0, B0], [])
    assert h.handle_response(req, 0, 42, [A0])
    req = h.build({A0: data(3), B0: data(0)})
    assert (req.epoch, req.to_send, req.to_forget) == (2, {}, [A1])
    assert h.incremental_requests == 2 and h.full_requests == 1


def test_no_session_granted_means_full_requests_asking_again() -> None:
    h = FetchSessionHandler(1)
    req = h.build({A0: data(0)})
    assert h.handle_response(req, 0, 0, [A0])
    req = h.build({A0: data(1)})
    assert (req.session_id, req.epoch, list(req.to_send)) == (0, 0, [A0])


def test_errors_restart_the_session() -> None:
    h = FetchSessionHandler(1)
    req = h.build({A0: data(0)})
    h.handle_response(req, 0, 42, [A0])
    req = h.build({A0: data(0)})
    assert not h.handle_response(req, InvalidFetchSessionEpochException.code, 0, [])
    req = h.build({A0: data(0)})
    assert (req.session_id, req.epoch, list(req.to_send)) == (42, 0, [A0])  # close 42, open anew
    h.handle_response(req, 0, 43, [A0])
    req = h.build({A0: data(0)})
    assert not h.handle_response(req, FetchSessionIdNotFoundException.code, 0, [])
    assert (h.build({A0: data(0)}).session_id, h.epoch) == (0, 0)
    h.handle_error()
    assert h.build({A0: data(0)}).epoch == 0


def test_answer_naming_a_partition_outside_the_session_is_not_used() -> None:
    h = FetchSessionHandler(1)
    req = h.build({A0: data(0)})
    h.handle_response(req, 0, 42, [A0])
    req = h.build({A0: data(0)})
    assert not h.handle_response(req, 0, 42, [B0])
    assert h.build({A0: data(0)}).epoch == 0


def test_broker_closing_the_session_drops_to_a_full_request() -> None:
    h = FetchSessionHandler(1)
    req = h.build({A0: data(0)})
    h.handle_response(req, 0, 42, [A0])
    req = h.build({A0: data(1)})
    assert h.handle_response(req, 0, 0, [A0])
    assert (h.build({A0: data(1)}).session_id, h.epoch) == (0, 0)


def test_incremental_build_from_changes_only_leaves_the_rest_of_the_session_alone() -> None:
    h = FetchSessionHandler(1)
    assert h.needs_full_request
    with pytest.raises(ValueError):
        h.build_incremental({A0: data(0)})  # no session yet: a full request is due
    req = h.build({A0: data(0), A1: data(0)})
    assert h.handle_response(req, 0, 42, [])
    assert not h.needs_full_request
    # A0 moved, B0 is new, A1 unchanged but named, an unknown partition forgotten: a no-op.
    req = h.build_incremental({A0: data(3), A1: data(0), B0: data(0), TopicPartition("c", 0): None})
    assert (req.session_id, req.epoch, list(req.to_send), req.to_forget) == (42, 1, [A0, B0], [])
    assert dict(h.session_partitions) == {A0: data(3), A1: data(0), B0: data(0)}
    assert h.handle_response(req, 0, 42, [A0])
    req = h.build_incremental({A1: None})
    assert (req.epoch, req.to_send, req.to_forget) == (2, {}, [A1])
    assert list(h.session_partitions) == [A0, B0]
    assert h.handle_response(req, InvalidFetchSessionEpochException.code, 0, []) is False
    assert h.needs_full_request
