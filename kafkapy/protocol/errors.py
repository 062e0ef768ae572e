"""Kafka error codes: one table of code, name, retriable flag and exception class.

Domain code raises these exceptions; the API layer turns them into codes with `error_code()`.
Codes and names are Kafka's (org.apache.kafka.common.protocol.Errors).
"""

from __future__ import annotations

from typing import ClassVar


class KafkaError(Exception):
    """Base of every error that maps to a Kafka error code."""

    code: ClassVar[int] = -1
    name: ClassVar[str] = "UNKNOWN_SERVER_ERROR"
    retriable: ClassVar[bool] = False

    def __init__(self, message: str = "") -> None:
        super().__init__(message or self.name)
        self.message = message or self.name


class UnknownServerException(KafkaError):
    code = -1
    name = "UNKNOWN_SERVER_ERROR"


class OffsetOutOfRangeException(KafkaError):
    code = 1
    name = "OFFSET_OUT_OF_RANGE"


class CorruptRecordException(KafkaError):
    code = 2
    name = "CORRUPT_MESSAGE"
    retriable = True


class UnknownTopicOrPartitionException(KafkaError):
    code = 3
    name = "UNKNOWN_TOPIC_OR_PARTITION"
    retriable = True


class InvalidFetchSizeException(KafkaError):
    code = 4
    name = "INVALID_FETCH_SIZE"


class LeaderNotAvailableException(KafkaError):
    code = 5
    name = "LEADER_NOT_AVAILABLE"
    retriable = True


class NotLeaderOrFollowerException(KafkaError):
    code = 6
    name = "NOT_LEADER_OR_FOLLOWER"
    retriable = True


class TimeoutException(KafkaError):
    code = 7
    name = "REQUEST_TIMED_OUT"
    retriable = True


class BrokerNotAvailableException(KafkaError):
    code = 8
    name = "BROKER_NOT_AVAILABLE"


class ReplicaNotAvailableException(KafkaError):
    code = 9
    name = "REPLICA_NOT_AVAILABLE"
    retriable = True


class RecordTooLargeException(KafkaError):
    code = 10
    name = "MESSAGE_TOO_LARGE"


class ControllerMovedException(KafkaError):
    code = 11
    name = "STALE_CONTROLLER_EPOCH"


class OffsetMetadataTooLarge(KafkaError):
    code = 12
    name = "OFFSET_METADATA_TOO_LARGE"


class NetworkException(KafkaError):
    code = 13
    name = "NETWORK_EXCEPTION"
    retriable = True


class CoordinatorLoadInProgressException(KafkaError):
    code = 14
    name = "COORDINATOR_LOAD_IN_PROGRESS"
    retriable = True


class CoordinatorNotAvailableException(KafkaError):
    code = 15
    name = "COORDINATOR_NOT_AVAILABLE"
    retriable = True


class NotCoordinatorException(KafkaError):
    code = 16
    name = "NOT_COORDINATOR"
    retriable = True


class InvalidTopicException(KafkaError):
    code = 17
    name = "INVALID_TOPIC_EXCEPTION"


class RecordBatchTooLargeException(KafkaError):
    code = 18
    name = "RECORD_LIST_TOO_LARGE"


class NotEnoughReplicasException(KafkaError):
    code = 19
    name = "NOT_ENOUGH_REPLICAS"
    retriable = True


class NotEnoughReplicasAfterAppendException(KafkaError):
    code = 20
    name = "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
    retriable = True


class InvalidRequiredAcksException(KafkaError):
    code = 21
    name = "INVALID_REQUIRED_ACKS"


class IllegalGenerationException(KafkaError):
    code = 22
    name = "ILLEGAL_GENERATION"


class InconsistentGroupProtocolException(KafkaError):
    code = 23
    name = "INCONSISTENT_GROUP_PROTOCOL"


class InvalidGroupIdException(KafkaError):
    code = 24
    name = "INVALID_GROUP_ID"


class UnknownMemberIdException(KafkaError):
    code = 25
    name = "UNKNOWN_MEMBER_ID"


class InvalidSessionTimeoutException(KafkaError):
    code = 26
    name = "INVALID_SESSION_TIMEOUT"


class RebalanceInProgressException(KafkaError):
    code = 27
    name = "REBALANCE_IN_PROGRESS"


class InvalidCommitOffsetSizeException(KafkaError):
    code = 28
    name = "INVALID_COMMIT_OFFSET_SIZE"


class TopicAuthorizationException(KafkaError):
    code = 29
    name = "TOPIC_AUTHORIZATION_FAILED"


class GroupAuthorizationException(KafkaError):
    code = 30
    name = "GROUP_AUTHORIZATION_FAILED"


class ClusterAuthorizationException(KafkaError):
    code = 31
    name = "CLUSTER_AUTHORIZATION_FAILED"


class InvalidTimestampException(KafkaError):
    code = 32
    name = "INVALID_TIMESTAMP"


class UnsupportedSaslMechanismException(KafkaError):
    code = 33
    name = "UNSUPPORTED_SASL_MECHANISM"


class IllegalSaslStateException(KafkaError):
    code = 34
    name = "ILLEGAL_SASL_STATE"


class UnsupportedVersionException(KafkaError):
    code = 35
    name = "UNSUPPORTED_VERSION"


class TopicExistsException(KafkaError):
    code = 36
    name = "TOPIC_ALREADY_EXISTS"


class InvalidPartitionsException(KafkaError):
    code = 37
    name = "INVALID_PARTITIONS"


class InvalidReplicationFactorException(KafkaError):
    code = 38
    name = "INVALID_REPLICATION_FACTOR"


class InvalidReplicaAssignmentException(KafkaError):
    code = 39
    name = "INVALID_REPLICA_ASSIGNMENT"


class InvalidConfigurationException(KafkaError):
    code = 40
    name = "INVALID_CONFIG"


class NotControllerException(KafkaError):
    code = 41
    name = "NOT_CONTROLLER"
    retriable = True


class InvalidRequestException(KafkaError):
    code = 42
    name = "INVALID_REQUEST"


class UnsupportedForMessageFormatException(KafkaError):
    code = 43
    name = "UNSUPPORTED_FOR_MESSAGE_FORMAT"


class PolicyViolationException(KafkaError):
    code = 44
    name = "POLICY_VIOLATION"


class OutOfOrderSequenceException(KafkaError):
    code = 45
    name = "OUT_OF_ORDER_SEQUENCE_NUMBER"


class DuplicateSequenceException(KafkaError):
    code = 46
    name = "DUPLICATE_SEQUENCE_NUMBER"


class InvalidProducerEpochException(KafkaError):
    code = 47
    name = "INVALID_PRODUCER_EPOCH"


class InvalidTxnStateException(KafkaError):
    code = 48
    name = "INVALID_TXN_STATE"


class InvalidPidMappingException(KafkaError):
    code = 49
    name = "INVALID_PRODUCER_ID_MAPPING"


class InvalidTxnTimeoutException(KafkaError):
    code = 50
    name = "INVALID_TRANSACTION_TIMEOUT"


class ConcurrentTransactionsException(KafkaError):
    code = 51
    name = "CONCURRENT_TRANSACTIONS"
    retriable = True


class TransactionCoordinatorFencedException(KafkaError):
    code = 52
    name = "TRANSACTION_COORDINATOR_FENCED"


class TransactionalIdAuthorizationException(KafkaError):
    code = 53
    name = "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"


class SecurityDisabledException(KafkaError):
    code = 54
    name = "SECURITY_DISABLED"


class OperationNotAttemptedException(KafkaError):
    code = 55
    name = "OPERATION_NOT_ATTEMPTED"


class KafkaStorageException(KafkaError):
    code = 56
    name = "KAFKA_STORAGE_ERROR"
    retriable = True


class LogDirNotFoundException(KafkaError):
    code = 57
    name = "LOG_DIR_NOT_FOUND"


class SaslAuthenticationException(KafkaError):
    code = 58
    name = "SASL_AUTHENTICATION_FAILED"


class UnknownProducerIdException(KafkaError):
    code = 59
    name = "UNKNOWN_PRODUCER_ID"


class ReassignmentInProgressException(KafkaError):
    code = 60
    name = "REASSIGNMENT_IN_PROGRESS"


class DelegationTokenDisabledException(KafkaError):
    code = 61
    name = "DELEGATION_TOKEN_AUTH_DISABLED"


class DelegationTokenNotFoundException(KafkaError):
    code = 62
    name = "DELEGATION_TOKEN_NOT_FOUND"


class DelegationTokenOwnerMismatchException(KafkaError):
    code = 63
    name = "DELEGATION_TOKEN_OWNER_MISMATCH"


class UnsupportedByAuthenticationException(KafkaError):
    code = 64
    name = "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED"


class DelegationTokenAuthorizationException(KafkaError):
    code = 65
    name = "DELEGATION_TOKEN_AUTHORIZATION_FAILED"


class DelegationTokenExpiredException(KafkaError):
    code = 66
    name = "DELEGATION_TOKEN_EXPIRED"


class InvalidPrincipalTypeException(KafkaError):
    code = 67
    name = "INVALID_PRINCIPAL_TYPE"


class GroupNotEmptyException(KafkaError):
    code = 68
    name = "NON_EMPTY_GROUP"


class GroupIdNotFoundException(KafkaError):
    code = 69
    name = "GROUP_ID_NOT_FOUND"


class FetchSessionIdNotFoundException(KafkaError):
    code = 70
    name = "FETCH_SESSION_ID_NOT_FOUND"
    retriable = True


class InvalidFetchSessionEpochException(KafkaError):
    code = 71
    name = "INVALID_FETCH_SESSION_EPOCH"
    retriable = True


class ListenerNotFoundException(KafkaError):
    code = 72
    name = "LISTENER_NOT_FOUND"
    retriable = True


class TopicDeletionDisabledException(KafkaError):
    code = 73
    name = "TOPIC_DELETION_DISABLED"


class FencedLeaderEpochException(KafkaError):
    code = 74
    name = "FENCED_LEADER_EPOCH"
    retriable = True


class UnknownLeaderEpochException(KafkaError):
    code = 75
    name = "UNKNOWN_LEADER_EPOCH"
    retriable = True


class UnsupportedCompressionTypeException(KafkaError):
    code = 76
    name = "UNSUPPORTED_COMPRESSION_TYPE"


class StaleBrokerEpochException(KafkaError):
    code = 77
    name = "STALE_BROKER_EPOCH"


class OffsetNotAvailableException(KafkaError):
    code = 78
    name = "OFFSET_NOT_AVAILABLE"
    retriable = True


class MemberIdRequiredException(KafkaError):
    code = 79
    name = "MEMBER_ID_REQUIRED"


class PreferredLeaderNotAvailableException(KafkaError):
    code = 80
    name = "PREFERRED_LEADER_NOT_AVAILABLE"
    retriable = True


class GroupMaxSizeReachedException(KafkaError):
    code = 81
    name = "GROUP_MAX_SIZE_REACHED"


class FencedInstanceIdException(KafkaError):
    code = 82
    name = "FENCED_INSTANCE_ID"


class EligibleLeadersNotAvailableException(KafkaError):
    code = 83
    name = "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    retriable = True


class ElectionNotNeededException(KafkaError):
    code = 84
    name = "ELECTION_NOT_NEEDED"


class NoReassignmentInProgressException(KafkaError):
    code = 85
    name = "NO_REASSIGNMENT_IN_PROGRESS"


class GroupSubscribedToTopicException(KafkaError):
    code = 86
    name = "GROUP_SUBSCRIBED_TO_TOPIC"


class InvalidRecordException(KafkaError):
    code = 87
    name = "INVALID_RECORD"


class UnstableOffsetCommitException(KafkaError):
    code = 88
    name = "UNSTABLE_OFFSET_COMMIT"
    retriable = True


class ThrottlingQuotaExceededException(KafkaError):
    code = 89
    name = "THROTTLING_QUOTA_EXCEEDED"
    retriable = True


class ProducerFencedException(KafkaError):
    code = 90
    name = "PRODUCER_FENCED"


class ResourceNotFoundException(KafkaError):
    code = 91
    name = "RESOURCE_NOT_FOUND"


class DuplicateResourceException(KafkaError):
    code = 92
    name = "DUPLICATE_RESOURCE"


class UnacceptableCredentialException(KafkaError):
    code = 93
    name = "UNACCEPTABLE_CREDENTIAL"


class InconsistentVoterSetException(KafkaError):
    code = 94
    name = "INCONSISTENT_VOTER_SET"


class InvalidUpdateVersionException(KafkaError):
    code = 95
    name = "INVALID_UPDATE_VERSION"


class FeatureUpdateFailedException(KafkaError):
    code = 96
    name = "FEATURE_UPDATE_FAILED"


class PrincipalDeserializationException(KafkaError):
    code = 97
    name = "PRINCIPAL_DESERIALIZATION_FAILURE"


class SnapshotNotFoundException(KafkaError):
    code = 98
    name = "SNAPSHOT_NOT_FOUND"


class PositionOutOfRangeException(KafkaError):
    code = 99
    name = "POSITION_OUT_OF_RANGE"


class UnknownTopicIdException(KafkaError):
    code = 100
    name = "UNKNOWN_TOPIC_ID"
    retriable = True


class DuplicateBrokerRegistrationException(KafkaError):
    code = 101
    name = "DUPLICATE_BROKER_REGISTRATION"


class BrokerIdNotRegisteredException(KafkaError):
    code = 102
    name = "BROKER_ID_NOT_REGISTERED"


class InconsistentTopicIdException(KafkaError):
    code = 103
    name = "INCONSISTENT_TOPIC_ID"
    retriable = True


class InconsistentClusterIdException(KafkaError):
    code = 104
    name = "INCONSISTENT_CLUSTER_ID"


class TransactionalIdNotFoundException(KafkaError):
    code = 105
    name = "TRANSACTIONAL_ID_NOT_FOUND"


class FetchSessionTopicIdException(KafkaError):
    code = 106
    name = "FETCH_SESSION_TOPIC_ID_ERROR"
    retriable = True


class IneligibleReplicaException(KafkaError):
    code = 107
    name = "INELIGIBLE_REPLICA"


class NewLeaderElectedException(KafkaError):
    code = 108
    name = "NEW_LEADER_ELECTED"


BY_CODE: dict[int, type[KafkaError]] = {c.code: c for c in KafkaError.__subclasses__()}
BY_NAME: dict[str, type[KafkaError]] = {c.name: c for c in BY_CODE.values()}
NONE = 0


def error_code(exc: BaseException) -> int:
    """The Kafka error code to answer for `exc`: its own code, or UNKNOWN_SERVER_ERROR."""
    return exc.code if isinstance(exc, KafkaError) else UnknownServerException.code


def error_name(code: int) -> str:
    if code == NONE:
        return "NONE"
    cls = BY_CODE.get(code)
    return cls.name if cls else f"UNKNOWN_ERROR_{code}"


def for_code(code: int, message: str = "") -> KafkaError:
    """The exception for a code received from a broker (clients and tools raise it)."""
    return BY_CODE.get(code, UnknownServerException)(message)


class ProtocolError(Exception):
    """Bytes from the wire that do not follow the protocol: the connection is closed."""
