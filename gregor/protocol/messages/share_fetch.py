"""ShareFetch (key 78): a share-group member acquires records of its partitions and, in the
same request, acknowledges the ones it was given before (KIP-932).

v1 (Kafka 4.1) dropped PartitionMaxBytes and added MaxRecords, BatchSize and the response's
AcquisitionLockTimeoutMs; v2 (Kafka 4.2) added ShareAcquireMode (KIP-1206: 1 = the record
limit is strict) and IsRenewAck (KIP-1222: acknowledgements may RENEW a lock). v0 stays in
the description for the comparison with Kafka's schema files; the broker serves v1-v2."""
from ..schema import Api, F, NULL

ACK_BATCHES = F("acknowledgement_batches", "[]", fields=[
    F("first_offset", "int64"),
    F("last_offset", "int64"),
    F("acknowledge_types", "[]int8"),
])

LEADER = F("current_leader", "struct", fields=[
    F("leader_id", "int32"),
    F("leader_epoch", "int32"),
])

NODE_ENDPOINTS = F("node_endpoints", "[]", fields=[
    F("node_id", "int32"),
    F("host", "string"),
    F("port", "int32"),
    F("rack", "string", nullable="0+", default=NULL),
])

API = Api(
    key=78, name="ShareFetch", valid=(0, 2), flexible=0,
    request=[
        F("group_id", "string", nullable="0+", default=NULL),
        F("member_id", "string", nullable="0+"),
        F("share_session_epoch", "int32"),
        F("max_wait_ms", "int32"),
        F("min_bytes", "int32"),
        F("max_bytes", "int32", default=0x7fffffff),
        F("max_records", "int32", v="1+"),
        F("batch_size", "int32", v="1+"),
        F("share_acquire_mode", "int8", v="2+"),
        F("is_renew_ack", "bool", v="2+"),
        F("topics", "[]", fields=[
            F("topic_id", "uuid"),
            F("partitions", "[]", fields=[
                F("partition_index", "int32"),
                F("partition_max_bytes", "int32", v="0"),
                ACK_BATCHES,
            ]),
        ]),
        F("forgotten_topics_data", "[]", fields=[
            F("topic_id", "uuid"),
            F("partitions", "[]int32"),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=NULL),
        F("acquisition_lock_timeout_ms", "int32", v="1+"),
        F("responses", "[]", fields=[
            F("topic_id", "uuid"),
            F("partitions", "[]", fields=[
                F("partition_index", "int32"),
                F("error_code", "int16"),
                F("error_message", "string", nullable="0+", default=NULL),
                F("acknowledge_error_code", "int16"),
                F("acknowledge_error_message", "string", nullable="0+", default=NULL),
                LEADER,
                F("records", "records", nullable="0+"),
                F("acquired_records", "[]", fields=[
                    F("first_offset", "int64"),
                    F("last_offset", "int64"),
                    F("delivery_count", "int16"),
                ]),
            ]),
        ]),
        NODE_ENDPOINTS,
    ],
)
