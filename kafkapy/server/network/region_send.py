"""RegionSend: where a response made of bytes and FileRegions stands while it is sent in chunks."""

from __future__ import annotations

import os
from typing import Any

from kafkapy.protocol.file_region import FileRegion


class RegionSend:
    """Where a response made of bytes and FileRegions stands while it is sent chunk by chunk."""

    __slots__ = ("parts", "index", "offset")

    def __init__(self, parts: list[Any]) -> None:
        self.parts = parts
        self.index = 0  # current part
        self.offset = 0  # bytes of the current part already copied

    @property
    def done(self) -> bool:
        return self.index >= len(self.parts)

    def fill(self, buf: memoryview) -> int:
        """Copy the next bytes into `buf`; the count copied, or -1 if a file region ran short."""
        pos, size = 0, len(buf)
        while pos < size and self.index < len(self.parts):
            part = self.parts[self.index]
            if isinstance(part, FileRegion):
                n = min(part.length - self.offset, size - pos)
                got = os.preadv(part.fd, [buf[pos : pos + n]], part.position + self.offset)
                if got <= 0:
                    return -1
                length = part.length
            else:
                data = part if isinstance(part, bytes) else memoryview(part).cast("B")
                got = min(len(data) - self.offset, size - pos)
                buf[pos : pos + got] = data[self.offset : self.offset + got]
                length = len(data)
            pos += got
            self.offset += got
            if self.offset >= length:
                self.index += 1
                self.offset = 0
        return pos
