"""A slice of an open file, sent to a socket without passing through Python buffers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class FileRegion:
    """`length` bytes of the file behind `fd`, from `position`.

    `owner` keeps the file object (a log segment's) alive until the region is sent: a segment
    deleted by retention while a fetch response is queued must not close the descriptor under it.
    """

    fd: int
    position: int
    length: int
    owner: Any = None
