"""The checked-in message classes: current with the specs, typed, and the ones the codec uses."""

from __future__ import annotations

import typing
import uuid
from pathlib import Path

import pytest

from kafkapy.protocol import generate, messages
from kafkapy.protocol.constants import ZERO_UUID
from kafkapy.protocol.generated.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkapy.protocol.generated.metadata_response import MetadataResponse
from kafkapy.protocol.message import Message


@pytest.mark.timeout(60)
def test_generated_code_is_current_with_the_specs() -> None:
    stale = generate.stale_files()
    assert not stale, f"stale generated modules {stale}: run `python -m kafkapy.protocol.generate`"


@pytest.mark.timeout(30)
def test_the_codec_decodes_into_the_checked_in_classes() -> None:
    wire = messages.encode_request(3, 12, MetadataRequest(topics=[MetadataRequestTopic(name="a")]))
    req = messages.decode_request(3, 12, wire)
    assert type(req) is MetadataRequest and type(req.topics[0]) is MetadataRequestTopic
    assert messages.message_class(3, 12, "response") is MetadataResponse


@pytest.mark.timeout(30)
def test_defaults_are_fresh_per_object_and_fields_a_version_lacks_keep_them() -> None:
    a, b = MetadataRequest(), MetadataRequest()
    assert a.topics == [] and a.topics is not b.topics
    assert MetadataRequestTopic().topic_id == ZERO_UUID
    req = messages.decode_request(3, 3, messages.encode_request(3, 3, {"topics": None}))
    assert req.allow_auto_topic_creation is True  # a v4+ field at v3


@pytest.mark.timeout(30)
def test_annotations_are_precise() -> None:
    hints = {k: v for k, v in typing.get_type_hints(MetadataRequestTopic).items() if not k.startswith("_")}
    assert hints == {"topic_id": uuid.UUID, "name": str | None}
    hints = typing.get_type_hints(MetadataRequest)
    assert hints["topics"] == list[MetadataRequestTopic] | None
    assert hints["allow_auto_topic_creation"] is bool


@pytest.mark.timeout(30)
def test_classes_are_slotted_messages() -> None:
    topic = MetadataRequestTopic(name="t")
    assert isinstance(topic, Message) and not hasattr(topic, "__dict__")
    with pytest.raises(AttributeError):
        topic.nmae = "typo"  # type: ignore[attr-defined]
    assert topic.to_dict() == {"topic_id": ZERO_UUID, "name": "t"}
    assert topic == MetadataRequestTopic(name="t") != MetadataRequestTopic(name="u")


@pytest.mark.timeout(30)
def test_stale_code_is_detected(tmp_path: Path) -> None:
    generate.write_all(tmp_path)
    assert generate.stale_files(tmp_path) == []
    target = tmp_path / "metadata_request.py"
    target.write_text(target.read_text().replace("allow_auto_topic_creation", "allow_auto_creation"))
    (tmp_path / "gone_request.py").write_text("")
    assert generate.stale_files(tmp_path) == ["gone_request.py", "metadata_request.py"]
