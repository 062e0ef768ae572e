"""Controller-internal failures (Kafka's kafka.common.StateChangeFailedException and friends).

Wire-visible errors (ControllerMovedException, StaleBrokerEpochException, ...) come from
kafkapy.protocol.errors; these never leave the controller except as log lines.
"""

from __future__ import annotations


class StateChangeFailedException(Exception):
    """A partition or replica could not be moved to the requested state."""
