"""Which Kafka errors mean "not written" (fail) and which leave it open (info), as in Jepsen.

Only an error the broker returns before it appends, or that refuses the request outright,
is definite. Everything else (request timeouts, lost connections, NOT_LEADER_OR_FOLLOWER,
NOT_ENOUGH_REPLICAS_AFTER_APPEND, an unknown server error) may have been written, now or by
a retry, and completes the op as info. NOT_ENOUGH_REPLICAS is one of them too: the broker (as
Kafka's Partition.appendRecordsToLeader) checks min.insync.replicas before it looks for a
duplicate, so a client's retry of a batch an earlier attempt appended is answered with it;
the error a client reports after its retries says nothing of those earlier attempts. Each client module maps its own exceptions to Kafka's
error names and calls `classify_name`; names differ a little between clients (librdkafka
says UNKNOWN_TOPIC_OR_PART), so both spellings are here.
"""
from __future__ import annotations

from gregor.testing.history.op import FAIL, INFO

DEFINITE = frozenset({
    "UNKNOWN_TOPIC_OR_PART", "UNKNOWN_TOPIC_OR_PARTITION",
    "INVALID_TOPIC_EXCEPTION", "INVALID_TOPIC",
    "TOPIC_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "SASL_AUTHENTICATION_FAILED",
    "INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED", "OUT_OF_ORDER_SEQUENCE_NUMBER",
    "MESSAGE_TOO_LARGE", "MSG_SIZE_TOO_LARGE", "RECORD_LIST_TOO_LARGE", "INVALID_RECORD",
    "CORRUPT_MESSAGE", "INVALID_REQUIRED_ACKS", "INVALID_TXN_STATE",
})

# errors after which the producer is no longer usable: a new client and a new process
FATAL = frozenset({"PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "OUT_OF_ORDER_SEQUENCE_NUMBER",
                   "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "_FENCED", "INVALID_TXN_STATE"})


def classify_name(name: str) -> tuple[str, str]:
    return (FAIL if name in DEFINITE else INFO), name

