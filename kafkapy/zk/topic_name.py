"""Topic name rules, as Kafka's org.apache.kafka.common.internals.Topic states them."""

from __future__ import annotations

import re
from collections.abc import Iterable

from kafkapy.protocol.errors import InvalidTopicException

MAX_NAME_LENGTH = 249
LEGAL_CHARS = "[a-zA-Z0-9._-]"
_LEGAL = re.compile(f"{LEGAL_CHARS}+")

GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"
TRANSACTION_STATE_TOPIC_NAME = "__transaction_state"
INTERNAL_TOPICS = frozenset({GROUP_METADATA_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME})

# What kafka-topics prints when a new name mixes '.' and '_'.
COLLISION_WARNING = (
    "WARNING: Due to limitations in metric names, topics with a period ('.') or "
    "underscore ('_') could collide. To avoid issues it is best to use either, "
    "but not both."
)


def validate_topic_name(topic: str) -> None:
    """Raise InvalidTopicException with Kafka's message if `topic` is not a legal name."""
    if not topic:
        raise InvalidTopicException("Topic name is illegal, it can't be empty")
    if topic in (".", ".."):
        raise InvalidTopicException('Topic name cannot be "." or ".."')
    if len(topic) > MAX_NAME_LENGTH:
        raise InvalidTopicException(
            f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} "
            f"characters, topic name: {topic}"
        )
    # fullmatch on an ASCII class: str.isalnum() would let non-ASCII letters through.
    if not _LEGAL.fullmatch(topic):
        raise InvalidTopicException(
            f'Topic name "{topic}" is illegal, it contains a character other '
            "than ASCII alphanumerics, '.', '_' and '-'"
        )


def is_internal(topic: str) -> bool:
    return topic in INTERNAL_TOPICS


def has_collision_chars(topic: str) -> bool:
    """Metric names replace '.' with '_', so a name with either may collide with another."""
    return "_" in topic or "." in topic


def has_collision(topic_a: str, topic_b: str) -> bool:
    return topic_a.replace(".", "_") == topic_b.replace(".", "_")


def colliding_topics(topic: str, existing: Iterable[str]) -> list[str]:
    return sorted(t for t in existing if t != topic and has_collision(topic, t))
