"""JSON as Kafka writes it into znodes.

Kafka serialises with Jackson: compact (no spaces), non-ASCII left as UTF-8, and object keys in the
iteration order of the Scala map it built. For the payloads whose key set is fixed we spell that
order out per znode (see each `encode`), so our bytes match what a Kafka 2.8 broker writes.
"""

from __future__ import annotations

import json
import time
from typing import Any

from kafkapy.zk.errors import ZkDataError


def encode_json(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def decode_json(data: bytes | None) -> Any:
    """Parse znode data; an empty or absent payload is None, like Kafka's `Json.parseBytes`."""
    if not data:
        return None
    try:
        return json.loads(data.decode("utf-8"))
    except ValueError as e:  # bad UTF-8 or bad JSON
        raise ZkDataError(f"Invalid JSON in znode: {data[:200]!r}") from e


def ordered(obj: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """Re-key `obj` in `keys` order (keys missing from `obj` are skipped)."""
    return {k: obj[k] for k in keys if k in obj}


def now_ms() -> int:
    return time.time_ns() // 1_000_000
