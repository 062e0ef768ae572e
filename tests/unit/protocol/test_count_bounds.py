"""Array counts are bounded by the fewest bytes an element takes, not one byte each: a count
the rest of the frame cannot hold is refused before any element is built."""

from __future__ import annotations

import struct

import pytest

from kafkapy.protocol import messages
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import ProtocolError
from kafkapy.protocol.produce import decode_produce_request


@pytest.mark.timeout(10)
def test_a_struct_count_that_fits_bytes_but_not_elements_is_refused() -> None:
    # CreateTopics v2: a topic takes at least 16 bytes (name 2, num_partitions 4,
    # replication_factor 2, assignments 4, configs 4). 20 "topics" in 40 bytes cannot be.
    body = struct.pack(">i", 20) + bytes(40) + struct.pack(">i?", 1000, True)
    with pytest.raises(ProtocolError, match="CreatableTopic|Topics: count beyond the frame"):
        messages.decode_request(ApiKey.CREATE_TOPICS, 2, body)
    # The same count with room for every element decodes.
    body = struct.pack(">i", 2) + bytes(32) + struct.pack(">i?", 1000, True)
    assert len(messages.decode_request(ApiKey.CREATE_TOPICS, 2, body).topics) == 2


@pytest.mark.timeout(10)
def test_produce_partition_count_is_bounded_by_eight_bytes_each() -> None:
    # v3: transactional id (null), acks, timeout, one topic "t", then the partition count.
    head = struct.pack(">hhii", -1, 1, 1000, 1) + struct.pack(">h", 1) + b"t"
    with pytest.raises(ProtocolError, match="partitions length 10"):
        decode_produce_request(3, head + struct.pack(">i", 10) + bytes(79), 0)
    decoded = decode_produce_request(3, head + struct.pack(">i", 10) + struct.pack(">ii", 0, -1) * 10, 0)
    assert len(decoded.topics[0][1]) == 10


@pytest.mark.timeout(30)
def test_a_request_decodes_into_at_most_max_elements_over_all_its_arrays() -> None:
    """OffsetDelete v0 with 2.5 million partitions is a 10 MB frame that decoded into 214 MB of
    Messages (~21 times its size; 100 MB frames are allowed): the element budget refuses it."""
    n = 2_500_000
    body = (
        struct.pack(">h", 1) + b"g" + struct.pack(">i", 1) + struct.pack(">h", 1) + b"t"
        + struct.pack(">i", n) + struct.pack(f">{n}i", *range(n))
    )  # fmt: skip
    with pytest.raises(ProtocolError, match="more array elements than one message may hold"):
        messages.decode_request(ApiKey.OFFSET_DELETE, 0, body)
    small = messages.decode_request(ApiKey.OFFSET_DELETE, 0, body, max_elements=n + 1)
    assert len(small.topics[0].partitions) == n
    # The budget spans every array of the message, not each one on its own.
    two = (
        struct.pack(">h", 1)
        + b"g"
        + struct.pack(">i", 2)
        + (struct.pack(">h", 1) + b"t" + struct.pack(">ii", 1, 0)) * 2
    )
    assert len(messages.decode_request(ApiKey.OFFSET_DELETE, 0, two, max_elements=4).topics) == 2
    with pytest.raises(ProtocolError):
        messages.decode_request(ApiKey.OFFSET_DELETE, 0, two, max_elements=3)
