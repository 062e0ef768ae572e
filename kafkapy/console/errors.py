"""OperationError: how every console operation fails, with Kafka's error name and message.

One conversion, `operation_error`, turns what the shared client and tool code raise into it:
- a broker's answer (`kafkapy.protocol.errors.KafkaError`): its Kafka name (TOPIC_ALREADY_EXISTS,
  INVALID_CONFIG, POLICY_VIOLATION, ...) and the message as the broker sent it (or Kafka's default
  one when it sent none);
- a check Kafka's tools make before sending (the console makes the same ones): the name of the
  broker error the refused request would have met (INVALID_REPLICATION_FACTOR, INVALID_PARTITIONS,
  INVALID_REPLICA_ASSIGNMENT, UNKNOWN_TOPIC_OR_PARTITION, INVALID_CONFIG) with the tool's message;
  an unreadable plan or option value is INVALID_REQUEST; starting a reassignment while one is in
  flight (the tool's --additional refusal) is REASSIGNMENT_IN_PROGRESS (reassignment_ops.py);
- resetting the offsets of a group that is not inactive is NON_EMPTY_GROUP with
  kafka-consumer-groups' own message ("Assignments can only be reset if the group ...");
- a connection that failed (OSError) is NETWORK_EXCEPTION, with the system's message; a cluster
  that does not answer at all is the admin clients' REQUEST_TIMED_OUT ("Timed out waiting for a
  node assignment").
"""

from __future__ import annotations

from kafkapy.protocol.errors import (
    GroupNotEmptyException,
    InvalidRequestException,
    KafkaError,
    NetworkException,
    ReassignmentInProgressException,
)
from kafkapy.tools import kafka_json
from kafkapy.tools.consumer_groups_cmd.reset import UsageError
from kafkapy.tools.reassign_cmd.reassignment_json import AdminCommandFailedError
from kafkapy.zk.errors import AdminOperationError

INVALID_REQUEST = InvalidRequestException.name
NETWORK_EXCEPTION = NetworkException.name
NON_EMPTY_GROUP = GroupNotEmptyException.name
REASSIGNMENT_IN_PROGRESS = ReassignmentInProgressException.name


class OperationError(Exception):
    """An operation Kafka refused: `error_name` is Kafka's (Errors enum) name, `message` its text."""

    def __init__(self, error_name: str, message: str) -> None:
        super().__init__(f"{error_name}: {message}")
        self.error_name = error_name
        self.message = message

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OperationError) and (self.error_name, self.message) == (
            other.error_name,
            other.message,
        )

    def __hash__(self) -> int:
        return hash((self.error_name, self.message))

    def __repr__(self) -> str:
        return f"OperationError({self.error_name!r}, {self.message!r})"


def from_kafka(error: KafkaError) -> OperationError:
    return OperationError(error.name, error.message)


def operation_error(error: Exception) -> OperationError | None:
    """The OperationError for what a client or tool function raised; None for anything else (a
    bug, which the caller lets through)."""
    if isinstance(error, OperationError):
        return error
    if isinstance(error, KafkaError):
        return from_kafka(error)
    if isinstance(error, AdminCommandFailedError):  # before its base AdminOperationError
        return OperationError(error.error_name, str(error))
    if isinstance(error, AdminOperationError | kafka_json.JsonMappingError | UsageError):
        return OperationError(INVALID_REQUEST, str(error))
    if isinstance(error, OSError):
        return OperationError(NETWORK_EXCEPTION, str(error) or type(error).__name__)
    return None
