"""Reading the tools' JSON input as Kafka's kafka.utils.json does, with its error messages.

Kafka's tools decode fields with DecodeJson: a missing field is "No such field exists: `topic`",
a field of the wrong type is "Expected `Int` value, received "0"" (the node as Jackson prints it:
compact JSON). The tools print these messages as they are, so the same bad file gets the same
words from kafkapy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


class JsonMappingError(ValueError):
    """com.fasterxml.jackson.databind.JsonMappingException: the message is Kafka's."""


def node(value: object) -> str:
    """A JSON value as Jackson's JsonNode.toString prints it."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def field(obj: object, name: str) -> object:
    if not isinstance(obj, Mapping):
        raise JsonMappingError(f"Expected JSON object, received {node(obj)}")
    if name not in obj:
        raise JsonMappingError(f"No such field exists: `{name}`")
    return obj[name]


def as_int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not INT_MIN <= value <= INT_MAX:
        raise JsonMappingError(f"Expected `Int` value, received {node(value)}")
    return value


def as_long(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not LONG_MIN <= value <= LONG_MAX:
        raise JsonMappingError(f"Expected `Long` value, received {node(value)}")
    return value


def as_string(value: object) -> str:
    if not isinstance(value, str):
        raise JsonMappingError(f"Expected `String` value, received {node(value)}")
    return value


def as_array(value: object) -> list[object]:
    if not isinstance(value, list):
        raise JsonMappingError(f"Expected JSON array, received {node(value)}")
    return value
