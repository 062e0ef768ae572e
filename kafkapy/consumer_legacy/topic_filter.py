"""Whitelist / Blacklist topic filters for create_message_streams_by_filter (Kafka's TopicFilter).

The raw regex is normalised the way Kafka did it: trimmed, commas become alternation, spaces are
dropped and quotes at either end are stripped (property files may bring them). A topic is
allowed when the whole name matches (Java's String.matches), and internal topics are filtered
out when exclude.internal.topics is set.
"""

from __future__ import annotations

import re

# Kafka's Topic.isInternal: the offsets and transaction state topics.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def is_internal(topic: str) -> bool:
    return topic in INTERNAL_TOPICS


class TopicFilter:
    def __init__(self, raw_regex: str) -> None:
        regex = raw_regex.strip().replace(",", "|").replace(" ", "")
        regex = re.sub(r"^[\"']+", "", regex)
        regex = re.sub(r"[\"']+$", "", regex)
        try:
            self._pattern = re.compile(regex)
        except re.error:
            raise ValueError(f"{regex} is an invalid regex.") from None
        self.regex = regex

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.regex!r})"

    def __str__(self) -> str:
        return self.regex

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.regex == self.regex

    def __hash__(self) -> int:
        return hash((type(self), self.regex))

    def _matches(self, topic: str) -> bool:
        return self._pattern.fullmatch(topic) is not None

    def is_topic_allowed(self, topic: str, exclude_internal_topics: bool) -> bool:
        raise NotImplementedError


class Whitelist(TopicFilter):
    def is_topic_allowed(self, topic: str, exclude_internal_topics: bool) -> bool:
        return self._matches(topic) and not (is_internal(topic) and exclude_internal_topics)


class Blacklist(TopicFilter):
    def is_topic_allowed(self, topic: str, exclude_internal_topics: bool) -> bool:
        return not self._matches(topic) and not (is_internal(topic) and exclude_internal_topics)
