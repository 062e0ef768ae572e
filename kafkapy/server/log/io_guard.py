"""Kafka's Log.maybeHandleIOException: an OSError inside a log operation takes the log's dir
offline (through its LogDirFailureChannel) and reaches the caller as KAFKA_STORAGE_ERROR.

A log whose dir is already offline refuses every guarded operation at once: its files may be
gone, and the handler is about to close it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

from kafkapy.protocol.errors import KafkaStorageException

if TYPE_CHECKING:
    from kafkapy.server.log.log import Log

P = ParamSpec("P")
R = TypeVar("R")
L = TypeVar("L", bound="Log")


def io_guarded(message: str) -> Callable[[Callable[Concatenate[L, P], R]], Callable[Concatenate[L, P], R]]:
    """Wrap a Log method; `message` names the operation in Kafka's words, with `{tp}` and `{dir}`
    (e.g. "Error while appending records to {tp} in dir {dir}")."""

    def decorate(fn: Callable[Concatenate[L, P], R]) -> Callable[Concatenate[L, P], R]:
        @functools.wraps(fn)
        def guarded(self: L, /, *args: P.args, **kwargs: P.kwargs) -> R:
            channel = self.failure_channel
            if channel is not None and channel.offline_dirs:
                check_for_log_dir_failure(self)
            try:
                return fn(self, *args, **kwargs)
            except OSError as e:
                raise io_failed(self, message, e) from e

        return guarded

    return decorate


def check_for_log_dir_failure(log: Log) -> None:
    parent = os.path.dirname(log.dir)
    channel = log.failure_channel
    if channel is not None and channel.has_offline_log_dir(parent):
        raise KafkaStorageException(
            f"The log dir {parent} is already offline due to a previous IO exception."
        )


def io_failed(log: Log, message: str, error: OSError) -> KafkaStorageException:
    """Report `error` on the log's dir; the exception the caller should raise instead."""
    parent = os.path.dirname(log.dir)
    text = message.format(tp=log.name, dir=parent)
    channel = log.failure_channel
    if channel is not None:
        channel.maybe_add_offline_log_dir(parent, text, error)
    return KafkaStorageException(f"{text}: {error}")
