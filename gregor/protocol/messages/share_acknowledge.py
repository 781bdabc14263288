"""ShareAcknowledge (key 79): a share-group member accepts, releases or rejects records it
acquired, outside a ShareFetch. v2 (Kafka 4.2) adds IsRenewAck (RENEW extends a lock,
KIP-1222) and the response's AcquisitionLockTimeoutMs. The broker serves v1-v2."""
from ..schema import Api, F, NULL
from .share_fetch import ACK_BATCHES, LEADER, NODE_ENDPOINTS

API = Api(
    key=79, name="ShareAcknowledge", valid=(0, 2), flexible=0,
    request=[
        F("group_id", "string", nullable="0+", default=NULL),
        F("member_id", "string", nullable="0+"),
        F("share_session_epoch", "int32"),
        F("is_renew_ack", "bool", v="2+"),
        F("topics", "[]", fields=[
            F("topic_id", "uuid"),
            F("partitions", "[]", fields=[
                F("partition_index", "int32"),
                ACK_BATCHES,
            ]),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=NULL),
        F("acquisition_lock_timeout_ms", "int32", v="2+"),
        F("responses", "[]", fields=[
            F("topic_id", "uuid"),
            F("partitions", "[]", fields=[
                F("partition_index", "int32"),
                F("error_code", "int16"),
                F("error_message", "string", nullable="0+", default=NULL),
                LEADER,
            ]),
        ]),
        NODE_ENDPOINTS,
    ],
)
