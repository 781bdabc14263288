"""Every Kafka error code: its name, whether a retry can help, and an exception class.

The table below is the single source: one row per code (Kafka's number, Kafka's UPPER_SNAKE
name, retriable flag, a one-line description). From it we build

- `ErrorCode`, an IntEnum with every code by Kafka's name (`ErrorCode.NONE == 0`);
- one `KafkaError` subclass per code, named in CamelCase + `Error`
  (`OUT_OF_ORDER_SEQUENCE_NUMBER` -> `OutOfOrderSequenceNumberError`; a trailing `_ERROR` or
  `_EXCEPTION` in Kafka's name is dropped first, so `KAFKA_STORAGE_ERROR` -> `KafkaStorageError`);
- `error_for_code(code, message=None)`, which also turns codes we have never heard of into
  something useful (an `UnknownServerError` subclass that keeps the number).

"Retriable" follows Kafka's own classification: the same request may succeed if sent again
later (possibly after refreshing metadata or finding the coordinator again).
"""
from __future__ import annotations

import enum
import sys

# (code, Kafka's name, retriable, what it means)
_TABLE: list[tuple[int, str, bool, str]] = [
    (-1, "UNKNOWN_SERVER_ERROR", False, "The broker hit an unexpected error while handling the request; its log has the details."),
    (0, "NONE", False, "No error."),
    (1, "OFFSET_OUT_OF_RANGE", False, "The offset asked for lies outside the partition's log (before its start or past its end)."),
    (2, "CORRUPT_MESSAGE", True, "A record batch failed its CRC check, has an impossible size, or is otherwise malformed."),
    (3, "UNKNOWN_TOPIC_OR_PARTITION", True, "This broker does not know the topic or partition; refresh metadata or create the topic."),
    (4, "INVALID_FETCH_SIZE", False, "The fetch size in the request is not acceptable."),
    (5, "LEADER_NOT_AVAILABLE", True, "The partition has no leader right now (an election is in progress); retry after a metadata refresh."),
    (6, "NOT_LEADER_OR_FOLLOWER", True, "This broker is not the leader (or not a replica) of the partition; refresh metadata and retry."),
    (7, "REQUEST_TIMED_OUT", True, "The request did not complete within its timeout."),
    (8, "BROKER_NOT_AVAILABLE", False, "The broker is not available."),
    (9, "REPLICA_NOT_AVAILABLE", True, "A replica of the partition is not available."),
    (10, "MESSAGE_TOO_LARGE", False, "A record batch is larger than the broker or topic allows (message.max.bytes / max.message.bytes)."),
    (11, "STALE_CONTROLLER_EPOCH", False, "The request came from a controller that has since been replaced."),
    (12, "OFFSET_METADATA_TOO_LARGE", False, "The metadata string committed with an offset is too long."),
    (13, "NETWORK_EXCEPTION", True, "The connection was closed before a response arrived."),
    (14, "COORDINATOR_LOAD_IN_PROGRESS", True, "The coordinator is still loading its state; retry shortly."),
    (15, "COORDINATOR_NOT_AVAILABLE", True, "The group or transaction coordinator is not available; find the coordinator again."),
    (16, "NOT_COORDINATOR", True, "This broker is not the coordinator for that group or transactional id; find the coordinator again."),
    (17, "INVALID_TOPIC_EXCEPTION", False, "The topic name is invalid, or the topic is internal and cannot be written to this way."),
    (18, "RECORD_LIST_TOO_LARGE", False, "The records in one partition of a produce request exceed the segment size."),
    (19, "NOT_ENOUGH_REPLICAS", True, "Fewer in-sync replicas than min.insync.replicas; the write was refused."),
    (20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", True, "The write reached the leader, but the in-sync replicas fell below min.insync.replicas before it was acknowledged."),
    (21, "INVALID_REQUIRED_ACKS", False, "The acks value is not one of -1, 0 or 1."),
    (22, "ILLEGAL_GENERATION", False, "The group generation in the request is not the current one; rejoin the group."),
    (23, "INCONSISTENT_GROUP_PROTOCOL", False, "The member's protocol type or protocols do not match the group's."),
    (24, "INVALID_GROUP_ID", False, "The group id is empty or otherwise invalid."),
    (25, "UNKNOWN_MEMBER_ID", False, "The coordinator does not know this member id; rejoin the group."),
    (26, "INVALID_SESSION_TIMEOUT", False, "The session timeout is outside the broker's allowed range (group.min/max.session.timeout.ms)."),
    (27, "REBALANCE_IN_PROGRESS", False, "The group is rebalancing; rejoin it."),
    (28, "INVALID_COMMIT_OFFSET_SIZE", False, "The offset commit was rejected because of its size."),
    (29, "TOPIC_AUTHORIZATION_FAILED", False, "The principal may not perform this operation on the topic."),
    (30, "GROUP_AUTHORIZATION_FAILED", False, "The principal may not perform this operation on the group."),
    (31, "CLUSTER_AUTHORIZATION_FAILED", False, "The principal may not perform this cluster-level operation."),
    (32, "INVALID_TIMESTAMP", False, "A record timestamp is outside the range the topic accepts."),
    (33, "UNSUPPORTED_SASL_MECHANISM", False, "The broker does not offer the requested SASL mechanism."),
    (34, "ILLEGAL_SASL_STATE", False, "The request is not allowed in the current SASL exchange state."),
    (35, "UNSUPPORTED_VERSION", False, "The broker does not support this API version; negotiate with ApiVersions."),
    (36, "TOPIC_ALREADY_EXISTS", False, "A topic with this name already exists."),
    (37, "INVALID_PARTITIONS", False, "The partition count is invalid (for example zero, negative, or a decrease)."),
    (38, "INVALID_REPLICATION_FACTOR", False, "The replication factor is invalid or larger than the number of brokers."),
    (39, "INVALID_REPLICA_ASSIGNMENT", False, "The explicit replica assignment is invalid."),
    (40, "INVALID_CONFIG", False, "A configuration name or value is invalid."),
    (41, "NOT_CONTROLLER", True, "This broker is not the active controller; find the controller and retry."),
    (42, "INVALID_REQUEST", False, "The request is malformed or inconsistent; the broker log may say why."),
    (43, "UNSUPPORTED_FOR_MESSAGE_FORMAT", False, "The topic's message format version does not support this request."),
    (44, "POLICY_VIOLATION", False, "The request breaks a policy configured on the broker."),
    (45, "OUT_OF_ORDER_SEQUENCE_NUMBER", False, "The broker received a producer sequence number that leaves a gap."),
    (46, "DUPLICATE_SEQUENCE_NUMBER", False, "The broker already has a batch with this producer sequence number."),
    (47, "INVALID_PRODUCER_EPOCH", False, "The producer epoch is older than the current one; another producer with the same id took over."),
    (48, "INVALID_TXN_STATE", False, "The operation is not valid in the transaction's current state."),
    (49, "INVALID_PRODUCER_ID_MAPPING", False, "The producer id does not belong to this transactional id."),
    (50, "INVALID_TRANSACTION_TIMEOUT", False, "The transaction timeout exceeds transaction.max.timeout.ms."),
    (51, "CONCURRENT_TRANSACTIONS", True, "The coordinator is still completing the previous transaction of this producer; retry."),
    (52, "TRANSACTION_COORDINATOR_FENCED", False, "The request came from a transaction coordinator that has been replaced."),
    (53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", False, "The principal may not use this transactional id."),
    (54, "SECURITY_DISABLED", False, "Security features are turned off on this broker."),
    (55, "OPERATION_NOT_ATTEMPTED", False, "The broker skipped this operation because a related one in the same request failed."),
    (56, "KAFKA_STORAGE_ERROR", True, "The broker's log directory for the partition failed; it is offline."),
    (57, "LOG_DIR_NOT_FOUND", False, "The named log directory does not exist on the broker."),
    (58, "SASL_AUTHENTICATION_FAILED", False, "SASL authentication failed (bad credentials or mechanism)."),
    (59, "UNKNOWN_PRODUCER_ID", False, "The broker has no state for this producer id (it may have expired); the producer must reset."),
    (60, "REASSIGNMENT_IN_PROGRESS", False, "A partition reassignment is already running."),
    (61, "DELEGATION_TOKEN_AUTH_DISABLED", False, "Delegation token authentication is turned off."),
    (62, "DELEGATION_TOKEN_NOT_FOUND", False, "No such delegation token."),
    (63, "DELEGATION_TOKEN_OWNER_MISMATCH", False, "The principal does not own this delegation token."),
    (64, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", False, "Delegation token requests are not allowed on this channel or with these credentials."),
    (65, "DELEGATION_TOKEN_AUTHORIZATION_FAILED", False, "The principal may not act on this delegation token."),
    (66, "DELEGATION_TOKEN_EXPIRED", False, "The delegation token has expired."),
    (67, "INVALID_PRINCIPAL_TYPE", False, "The principal type is not supported."),
    (68, "NON_EMPTY_GROUP", False, "The group still has members, so it cannot be deleted."),
    (69, "GROUP_ID_NOT_FOUND", False, "No such group."),
    (70, "FETCH_SESSION_ID_NOT_FOUND", True, "The broker does not know this fetch session; start a new one."),
    (71, "INVALID_FETCH_SESSION_EPOCH", True, "The fetch session epoch is not the expected one; start a new session."),
    (72, "LISTENER_NOT_FOUND", True, "The leader has no endpoint for the listener the request came in on."),
    (73, "TOPIC_DELETION_DISABLED", False, "Topic deletion is turned off (delete.topic.enable=false)."),
    (74, "FENCED_LEADER_EPOCH", True, "The leader epoch in the request is older than the broker's; refresh metadata."),
    (75, "UNKNOWN_LEADER_EPOCH", True, "The leader epoch in the request is newer than the broker's; retry later."),
    (76, "UNSUPPORTED_COMPRESSION_TYPE", False, "The requesting client does not support the topic's compression type."),
    (77, "STALE_BROKER_EPOCH", False, "The broker epoch in the request is out of date."),
    (78, "OFFSET_NOT_AVAILABLE", True, "The leader's high watermark has not caught up yet; retry."),
    (79, "MEMBER_ID_REQUIRED", False, "The group requires a member id; rejoin with the one the coordinator assigned."),
    (80, "PREFERRED_LEADER_NOT_AVAILABLE", True, "The preferred leader is not available."),
    (81, "GROUP_MAX_SIZE_REACHED", False, "The group already has group.max.size members."),
    (82, "FENCED_INSTANCE_ID", False, "Another member with the same group.instance.id replaced this one."),
    (83, "ELIGIBLE_LEADERS_NOT_AVAILABLE", True, "No replica is eligible to become leader."),
    (84, "ELECTION_NOT_NEEDED", True, "The partition already has the desired leader."),
    (85, "NO_REASSIGNMENT_IN_PROGRESS", False, "There is no reassignment to cancel."),
    (86, "GROUP_SUBSCRIBED_TO_TOPIC", False, "The group still consumes the topic, so its offsets cannot be deleted."),
    (87, "INVALID_RECORD", False, "A record failed the broker's validation (for example a null key on a compacted topic)."),
    (88, "UNSTABLE_OFFSET_COMMIT", True, "Some offsets for the partition are still part of an open transaction; retry."),
    (89, "THROTTLING_QUOTA_EXCEEDED", True, "The request exceeded a throttling quota; retry after the throttle time."),
    (90, "PRODUCER_FENCED", False, "A newer producer with the same transactional id fenced this one."),
    (91, "RESOURCE_NOT_FOUND", False, "The resource the request names does not exist."),
    (92, "DUPLICATE_RESOURCE", False, "The request names the same resource twice."),
    (93, "UNACCEPTABLE_CREDENTIAL", False, "The credential does not meet the broker's requirements."),
    (94, "INCONSISTENT_VOTER_SET", False, "The voter sets of the requester and the receiver disagree."),
    (95, "INVALID_UPDATE_VERSION", False, "The update version is invalid."),
    (96, "FEATURE_UPDATE_FAILED", False, "A feature update could not be applied."),
    (97, "PRINCIPAL_DESERIALIZATION_FAILURE", False, "The forwarded principal could not be deserialized."),
    (98, "SNAPSHOT_NOT_FOUND", False, "The requested metadata snapshot does not exist."),
    (99, "POSITION_OUT_OF_RANGE", False, "The requested snapshot position is outside the snapshot."),
    (100, "UNKNOWN_TOPIC_ID", True, "This broker does not know the topic id; refresh metadata."),
    (101, "DUPLICATE_BROKER_REGISTRATION", False, "A broker with this id is already registered."),
    (102, "BROKER_ID_NOT_REGISTERED", False, "No broker with this id is registered."),
    (103, "INCONSISTENT_TOPIC_ID", True, "The topic id in the request does not match the one the broker has; refresh metadata."),
    (104, "INCONSISTENT_CLUSTER_ID", False, "The cluster id in the request does not match this cluster."),
    (105, "TRANSACTIONAL_ID_NOT_FOUND", False, "No such transactional id."),
    (106, "FETCH_SESSION_TOPIC_ID_ERROR", True, "The fetch session's topic ids are inconsistent; start a new session."),
    (107, "INELIGIBLE_REPLICA", False, "The new ISR contains at least one replica that may not join it."),
    (108, "NEW_LEADER_ELECTED", False, "A new leader was elected while the request was pending."),
    (109, "OFFSET_MOVED_TO_TIERED_STORAGE", False, "The offset is only available in tiered storage."),
    (110, "FENCED_MEMBER_EPOCH", False, "The member epoch is fenced by the coordinator; rejoin with epoch 0."),
    (111, "UNRELEASED_INSTANCE_ID", False, "The instance id is still held by another member."),
    (112, "UNSUPPORTED_ASSIGNOR", False, "The coordinator does not support the requested assignor."),
    (113, "STALE_MEMBER_EPOCH", False, "The member epoch is stale; retry with the latest one."),
    (114, "MISMATCHED_ENDPOINT_TYPE", False, "The request went to a broker endpoint where a controller endpoint was expected, or the reverse."),
    (115, "UNSUPPORTED_ENDPOINT_TYPE", False, "This endpoint type does not support the API."),
    (116, "UNKNOWN_CONTROLLER_ID", False, "No controller with this id is known."),
    (117, "UNKNOWN_SUBSCRIPTION_ID", False, "The client telemetry subscription id is unknown or stale."),
    (118, "TELEMETRY_TOO_LARGE", False, "The client telemetry payload exceeds the allowed size."),
    (119, "INVALID_REGISTRATION", False, "The controller considers the broker registration invalid."),
    (120, "TRANSACTION_ABORTABLE", False, "The server hit an error the transaction can recover from by aborting."),
    (121, "INVALID_RECORD_STATE", False, "The record's state does not allow the requested acknowledgement."),
    (122, "SHARE_SESSION_NOT_FOUND", True, "The broker does not know this share session."),
    (123, "INVALID_SHARE_SESSION_EPOCH", True, "The share session epoch is not the expected one."),
    (124, "FENCED_STATE_EPOCH", False, "The share coordinator state epoch has been fenced."),
    (125, "INVALID_VOTER_KEY", False, "The voter key does not match the receiver's replica key."),
    (126, "DUPLICATE_VOTER", False, "The voter is already part of the voter set."),
    (127, "VOTER_NOT_FOUND", False, "The voter is not part of the voter set."),
    (128, "INVALID_REGULAR_EXPRESSION", False,
     "The regular expression of the subscription is not valid."),
    (133, "SHARE_SESSION_LIMIT_REACHED", True,
     "The broker holds as many share sessions as group.share.max.share.sessions allows."),
]


class KafkaError(Exception):
    """Base of every Kafka error. Class attributes describe the code; an instance may carry
    a more specific message (for example the error_message a broker sent)."""

    code: int = -1
    name: str = "UNKNOWN_SERVER_ERROR"
    retriable: bool = False
    message: str = ""
    description: str = ""

    def __init__(self, message: str | None = None):
        self.message = message or type(self).description
        super().__init__(self.message)

    def __str__(self) -> str:
        return f"{self.name} ({self.code}): {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


def _class_name(kafka_name: str) -> str:
    base = kafka_name
    for suffix in ("_EXCEPTION", "_ERROR"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    return "".join(part.capitalize() for part in base.split("_")) + "Error"


# Where the mechanical name is ambiguous or unhelpful, the contract names the class.
_NAME_OVERRIDES = {0: "NoError", 40: "InvalidConfigurationError"}

ErrorCode = enum.IntEnum("ErrorCode", [(name, code) for code, name, _, _ in _TABLE])
ErrorCode.__doc__ = "Every Kafka error code by Kafka's name (ErrorCode.NONE == 0)."
ErrorCode.__module__ = __name__

_BY_CODE: dict[int, type[KafkaError]] = {}
_module = sys.modules[__name__]
for _code, _name, _retriable, _text in _TABLE:
    _cls_name = _NAME_OVERRIDES.get(_code) or _class_name(_name)
    _cls = type(_cls_name, (KafkaError,), {
        "code": _code, "name": _name, "retriable": _retriable,
        "message": _text, "description": _text, "__doc__": f"{_name} ({_code}): {_text}",
        "__module__": __name__,
    })
    _BY_CODE[_code] = _cls
    setattr(_module, _cls_name, _cls)
del _code, _name, _retriable, _text, _cls_name, _cls

# Other spellings found in older Kafka versions and in other clients.
InvalidConfigError = _BY_CODE[40]
NotLeaderForPartitionError = _BY_CODE[6]
InvalidTopicExceptionError = _BY_CODE[17]
MessageSizeTooLargeError = _BY_CODE[10]
CorruptRecordError = _BY_CODE[2]


class UnknownErrorCodeError(_BY_CODE[-1]):  # type: ignore[misc,valid-type]
    """A code missing from our table (a newer broker, or garbage): keeps the number and
    behaves like UNKNOWN_SERVER_ERROR (not retriable)."""

    def __init__(self, code: int, message: str | None = None):
        self.code = code
        self.name = f"UNKNOWN_ERROR_CODE_{code}"
        super().__init__(message or f"the broker answered with error code {code}, which gregor "
                                    "does not know; check the broker's version and logs")


def error_class(code: int) -> type[KafkaError] | None:
    """The exception class for a code, or None for codes we do not know."""
    return _BY_CODE.get(code)


def error_for_code(code: int, message: str | None = None) -> KafkaError:
    """An exception instance for a code; unknown codes give an UnknownErrorCodeError."""
    cls = _BY_CODE.get(code)
    if cls is None:
        return UnknownErrorCodeError(code, message)
    return cls(message)


def raise_for_code(code: int, message: str | None = None) -> None:
    """Raise the matching exception unless code is 0 (NONE)."""
    if code:
        raise error_for_code(code, message)


def is_retriable(code: int) -> bool:
    cls = _BY_CODE.get(code)
    return cls is not None and cls.retriable


ALL_ERRORS: tuple[type[KafkaError], ...] = tuple(_BY_CODE[c] for c in sorted(_BY_CODE))
