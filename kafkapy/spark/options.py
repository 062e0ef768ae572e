"""Spark's Kafka source options, their checks and the offset JSON, with Spark's wording.

Options arrive from PySpark as a case-insensitive mapping with lower-cased keys; it is kept as
is (not copied into a dict) so that `get("subscribePattern")` and `get("subscribepattern")`
agree, as they do in Spark's own source.

Offset JSON is Spark's: {"topicA":{"0":23,"1":-2}} with -2 meaning earliest and -1 latest.
The same JSON (always resolved to real offsets) is what streaming queries checkpoint, so a
query moved from format("kafka") keeps its meaning.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafkapy.spark.clients import EARLIEST, LATEST, SourceClient, TopicPartition

STRATEGIES = ("assign", "subscribe", "subscribepattern")


class KafkaOptionError(ValueError):
    """An option Spark's Kafka source would refuse (IllegalArgumentException there)."""


def get_bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    value = options.get(name)
    if value is None:
        return default
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise KafkaOptionError(f"Option '{name}' must be true or false, got '{value}'")
    return text == "true"


def get_int(options: Mapping[str, str], name: str, default: int | None) -> int | None:
    value = options.get(name)
    if value is None:
        return default
    try:
        number = int(str(value).strip())
    except ValueError:
        raise KafkaOptionError(f"Option '{name}' must be an integer, got '{value}'") from None
    if number <= 0:
        raise KafkaOptionError(f"Invalid value '{value}' for option '{name}', must be a positive integer")
    return number


def bootstrap_servers(options: Mapping[str, str]) -> str:
    servers = options.get("kafka.bootstrap.servers")
    if not servers:
        raise KafkaOptionError(
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer"
        )
    return str(servers)


@dataclass(frozen=True, slots=True)
class Subscription:
    """Which topic partitions a query reads: assign, subscribe or subscribePattern."""

    kind: str
    value: str

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> Subscription:
        given = [(k, options.get(k)) for k in STRATEGIES if options.get(k) is not None]
        if len(given) != 1:
            names = "subscribe, subscribePattern, assign"
            if not given:
                raise KafkaOptionError(
                    f"One of the following options must be specified for Kafka source: {names}. "
                    "See the docs for more details."
                )
            raise KafkaOptionError(
                f"Only one of the following options can be specified for Kafka source: {names}. "
                "See the docs for more details."
            )
        kind, value = given[0]
        sub = cls(kind, str(value))
        sub.check()
        return sub

    def check(self) -> None:
        if self.kind == "subscribe" and not self.topics():
            raise KafkaOptionError(
                f"No topics to subscribe to as specified value for option 'subscribe' is '{self.value}'"
            )
        if self.kind == "subscribepattern":
            if not self.value.strip():
                raise KafkaOptionError(
                    "Pattern to subscribe is empty as specified value for option 'subscribePattern' is ''"
                )
            re.compile(self.value)
        if self.kind == "assign":
            self.assigned()

    def topics(self) -> list[str]:
        return [t.strip() for t in self.value.split(",") if t.strip()]

    def assigned(self) -> list[TopicPartition]:
        try:
            parsed = json.loads(self.value)
            return sorted((str(t), int(p)) for t, parts in parsed.items() for p in parts)
        except (ValueError, AttributeError, TypeError):
            raise KafkaOptionError(
                f'Expected e.g. {{"topicA":[0,1],"topicB":[0,1]}}, got {self.value}'
            ) from None

    def partitions(self, client: SourceClient) -> list[TopicPartition]:
        """The topic partitions as the cluster has them now (new partitions included)."""
        if self.kind == "assign":
            return self.assigned()
        if self.kind == "subscribe":
            found = client.partitions(self.topics())
        else:
            # Java's Pattern.matcher(topic).matches(): the whole name must match.
            pattern = re.compile(self.value)
            found = {t: ps for t, ps in client.partitions(None).items() if pattern.fullmatch(t)}
        return sorted((t, p) for t, ps in found.items() for p in ps)


def parse_offsets_json(text: str, option: str) -> dict[TopicPartition, int]:
    try:
        parsed = json.loads(text)
        return {(str(t), int(p)): int(o) for t, parts in parsed.items() for p, o in parts.items()}
    except (ValueError, AttributeError, TypeError):
        raise KafkaOptionError(
            f'Expected e.g. {{"topicA":{{"0":23,"1":-1}},"topicB":{{"0":-2}}}}, got {text} for option \'{option}\''
        ) from None


def offsets_to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """Spark's offset JSON as a dict (topics and partitions sorted, so equal offsets compare equal)."""
    out: dict[str, dict[str, int]] = {}
    for (t, p), o in sorted(offsets.items()):
        out.setdefault(t, {})[str(p)] = int(o)
    return out


def offsets_from_json(value: Mapping[str, Any]) -> dict[TopicPartition, int]:
    return {(t, int(p)): int(o) for t, parts in value.items() for p, o in parts.items()}


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """One end of a range as the user gave it: earliest, latest, per-partition JSON or timestamps."""

    kind: str  # "earliest" | "latest" | "offsets" | "timestamps" | "timestamp"
    offsets: tuple[tuple[TopicPartition, int], ...] = ()
    timestamp: int = 0

    @classmethod
    def parse(cls, options: Mapping[str, str], side: str, default: str) -> OffsetSpec:
        """side is "starting" or "ending"; Spark's precedence: global timestamp, per-partition
        timestamps, then offsets."""
        ts = options.get(f"{side}Timestamp")
        if ts is not None:
            try:
                return cls("timestamp", timestamp=int(str(ts).strip()))
            except ValueError:
                raise KafkaOptionError(f"Option '{side}Timestamp' must be a number, got '{ts}'") from None
        by_ts = options.get(f"{side}OffsetsByTimestamp")
        if by_ts is not None:
            return cls(
                "timestamps", tuple(parse_offsets_json(str(by_ts), f"{side}OffsetsByTimestamp").items())
            )
        text = str(options.get(f"{side}Offsets") or default).strip()
        if text.lower() in ("earliest", "latest"):
            return cls(text.lower())
        return cls("offsets", tuple(parse_offsets_json(text, f"{side}Offsets").items()))

    def check_for_batch(self, side: str) -> None:
        if side == "starting":
            if self.kind == "latest":
                raise KafkaOptionError("starting offset can't be latest for batch queries on Kafka")
            for (t, p), o in self.offsets:
                if o == LATEST:
                    raise KafkaOptionError(
                        f"startingOffsets for {t}-{p} can't be latest for batch queries on Kafka"
                    )
        else:
            if self.kind == "earliest":
                raise KafkaOptionError("ending offset can't be earliest for batch queries on Kafka")
            for (t, p), o in self.offsets:
                if o == EARLIEST:
                    raise KafkaOptionError(
                        f"endingOffsets for {t}-{p} can't be earliest for batch queries on Kafka"
                    )

    def resolve(
        self, client: SourceClient, tps: list[TopicPartition], side: str, strategy: str = "error"
    ) -> dict[TopicPartition, int]:
        """Real offsets for `tps`. Partitions a JSON spec does not name: Spark fails for
        offsets (the spec must name every partition) and falls back to the default otherwise."""
        if self.kind in ("earliest", "latest"):
            target = EARLIEST if self.kind == "earliest" else LATEST
            return client.list_offsets({tp: target for tp in tps})
        given = dict(self.offsets)
        if self.kind == "offsets":
            missing = [tp for tp in tps if tp not in given]
            if missing:
                raise KafkaOptionError(
                    f"If {side}Offsets contains specific offsets, you must specify all TopicPartitions. "
                    "Use -1 for latest, -2 for earliest. Missing: "
                    + ", ".join(f"{t}-{p}" for t, p in missing)
                )
            query = {tp: given[tp] for tp in tps if given[tp] < 0}
            found = client.list_offsets(query) if query else {}
            return {tp: found.get(tp, given[tp]) for tp in tps}
        stamps = (
            {tp: self.timestamp for tp in tps}
            if self.kind == "timestamp"
            else {tp: given[tp] for tp in tps if tp in given}
        )
        found = client.list_offsets(stamps)
        result: dict[TopicPartition, int] = {}
        unmatched = [tp for tp, o in found.items() if o < 0]
        if unmatched and side == "starting" and strategy == "error":
            raise KafkaOptionError(
                "No offset matched the timestamp for "
                + ", ".join(f"{t}-{p}" for t, p in unmatched)
                + "; set startingOffsetsByTimestampStrategy=latest to start at the latest offset instead"
            )
        latest = client.list_offsets({tp: LATEST for tp in unmatched}) if unmatched else {}
        for tp in tps:
            result[tp] = latest.get(tp, found.get(tp, -1))
            if tp not in found:  # a partition the timestamps JSON leaves out
                result[tp] = client.list_offsets({tp: EARLIEST if side == "starting" else LATEST})[tp]
        return result
