"""A failed write of a coordinator's internal topic as the client should see it (Kafka's
mappings): one for the group's own records (JoinGroup, SyncGroup, ConsumerGroupHeartbeat) and
the transaction log's (the partition is not ours any more -> NOT_COORDINATOR; ours but unable
to take the write now -> COORDINATOR_NOT_AVAILABLE), one for OffsetCommit."""
from __future__ import annotations

from ...protocol.errors import ErrorCode as E

# A failed write of __consumer_offsets or __transaction_state, as the client should see it.
STORE_ERRORS = {
    E.UNKNOWN_TOPIC_OR_PARTITION: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_ENOUGH_REPLICAS: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_ENOUGH_REPLICAS_AFTER_APPEND: E.COORDINATOR_NOT_AVAILABLE,
    E.REQUEST_TIMED_OUT: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_LEADER_OR_FOLLOWER: E.NOT_COORDINATOR,
    E.KAFKA_STORAGE_ERROR: E.NOT_COORDINATOR,
}

# A failed offsets write, as OffsetCommit reports it (Kafka's mapping).
COMMIT_STORE_ERRORS = {
    **STORE_ERRORS,
    E.MESSAGE_TOO_LARGE: E.INVALID_COMMIT_OFFSET_SIZE,
    E.RECORD_LIST_TOO_LARGE: E.INVALID_COMMIT_OFFSET_SIZE,
    E.INVALID_FETCH_SIZE: E.INVALID_COMMIT_OFFSET_SIZE,
    E.INVALID_PRODUCER_EPOCH: E.INVALID_PRODUCER_EPOCH,
    E.PRODUCER_FENCED: E.PRODUCER_FENCED,
}
