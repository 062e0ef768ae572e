"""Topic name validation as Kafka's Topic.validate."""

from __future__ import annotations

import pytest

from kafkapy.protocol.errors import InvalidTopicException
from kafkapy.zk.topic_name import (
    MAX_NAME_LENGTH,
    colliding_topics,
    has_collision,
    has_collision_chars,
    is_internal,
    validate_topic_name,
)


@pytest.mark.parametrize(
    "name", ["a", "valid-topic_1.x", "A" * MAX_NAME_LENGTH, "...a", "__consumer_offsets"]
)
def test_legal_names(name: str) -> None:
    validate_topic_name(name)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "Topic name is illegal, it can't be empty"),
        (".", 'Topic name cannot be "." or ".."'),
        ("..", 'Topic name cannot be "." or ".."'),
        ("a" * 250, "can't be longer than 249 characters"),
        ("bad name", "contains a character other than ASCII alphanumerics"),
        ("topic/x", "contains a character other than ASCII alphanumerics"),
        ("t\u00e9", "contains a character other than ASCII alphanumerics"),
    ],
)
def test_illegal_names(name: str, message: str) -> None:
    with pytest.raises(InvalidTopicException, match=message.replace(".", r"\.").replace('"', '"')):
        validate_topic_name(name)


def test_period_and_underscore_collide() -> None:
    assert has_collision_chars("a.b") and has_collision_chars("a_b") and not has_collision_chars("ab")
    assert has_collision("a.b", "a_b") and not has_collision("a.b", "a-b")
    assert colliding_topics("a.b", ["a_b", "a.b", "x"]) == ["a_b"]


def test_internal_topics() -> None:
    assert is_internal("__consumer_offsets") and not is_internal("consumer_offsets")
