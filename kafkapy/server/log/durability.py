"""How the log's writes reach the disk: one fsync per file as they are made, or one syncfs per
log dir once a whole batch of them is written.

Every write path of the log that syncs (a segment flush, a producer-state snapshot, the
leader-epoch checkpoint) takes a `Syncer`. `FSYNC_EACH`, the default everywhere, syncs each
file (and the directory after a rename) before the call returns: flush.ms, flush.messages, a
roll, an epoch change, DeleteRecords rely on that file alone being on disk afterwards.

A clean shutdown is the one place that writes to every log at once: ~5 syncs per log (the
`.log`, both index mappings, the snapshot and its directory), tens of thousands of synchronous
writes for 10k partitions on one recovery thread. There the LogManager passes `DEFERRED`,
which syncs nothing, and then calls `sync_filesystem` once per log dir (syncfs(2): the dirty
data and metadata of the whole filesystem, written back in one pass). Whoever passes `DEFERRED`
owes that call, and nothing may claim the writes durable before it has succeeded: the
recovery-point checkpoint and the clean-shutdown marker come after it, and a dir whose syncfs
fails gets neither. A crash in between leaves no marker, so the next start recovers the logs as
after any crash (a snapshot renamed into place but not yet written back is found corrupt and
rebuilt from the log).
"""

from __future__ import annotations

import ctypes
import mmap
import os
from collections.abc import Callable
from typing import Final, Protocol, final


def fsync_dir(path: str) -> None:
    """fsync directory `path` ("" is the current one): its entries after a create or rename."""
    fd = os.open(path or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Syncer(Protocol):
    """What a write path calls where its data must become durable."""

    def sync_file(self, fd: int) -> None:
        """The data and metadata of the open file `fd` (fsync)."""

    def sync_mapping(self, mm: mmap.mmap) -> None:
        """The dirty pages of a shared file mapping (msync)."""

    def sync_dir(self, path: str) -> None:
        """The entries of directory `path`, after a create or rename in it."""


@final
class FsyncEach:
    """Sync each file as it is written: the runtime paths."""

    def sync_file(self, fd: int) -> None:
        os.fsync(fd)

    def sync_mapping(self, mm: mmap.mmap) -> None:
        mm.flush()

    def sync_dir(self, path: str) -> None:
        fsync_dir(path)


@final
class Deferred:
    """Sync nothing now: the caller syncs the whole log dir afterwards with `sync_filesystem`
    and trusts none of these writes until that call has returned."""

    def sync_file(self, fd: int) -> None:
        pass

    def sync_mapping(self, mm: mmap.mmap) -> None:
        pass

    def sync_dir(self, path: str) -> None:
        pass


FSYNC_EACH: Final = FsyncEach()
DEFERRED: Final = Deferred()


def _load_syncfs() -> Callable[[int], int] | None:
    """libc's syncfs, or None where it has none (not Linux, or a libc older than glibc 2.14)."""
    try:
        # The symbols the interpreter was linked with, libc's among them (find_library would
        # run ldconfig in a subprocess).
        libc = ctypes.CDLL(None, use_errno=True)
        syncfs = libc.syncfs
    except (OSError, AttributeError):
        return None
    syncfs.argtypes = [ctypes.c_int]
    syncfs.restype = ctypes.c_int
    # A CDLL call releases the GIL: the loop and other dirs' recovery threads run meanwhile.
    fn: Callable[[int], int] = syncfs
    return fn


_syncfs = _load_syncfs()


def sync_filesystem(fd: int) -> None:
    """Write back every dirty page and the metadata of the filesystem holding `fd` (syncfs(2)).

    Raises OSError if the kernel reports a write-back error. Since Linux 5.8 that includes any
    error on this filesystem since `fd` was opened, so the LogManager passes a descriptor it
    opened at start-up (the dir's `.lock`): data written back, and lost, by the kernel's flusher
    before the shutdown counts too. Without syncfs, os.sync() does the same for every filesystem
    but reports no error at all; older kernels' syncfs reports none either.
    """
    if _syncfs is None:
        os.sync()
        return
    if _syncfs(fd) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"syncfs: {os.strerror(errno)}")
