"""ReadShareGroupState (key 84): a share-partition leader reads the durable state of a
share-partition from its share coordinator (the leader of the `__share_group_state`
partition the key hashes to). Broker to broker (KIP-932)."""
from ..schema import Api, F, NULL

STATE_BATCHES = F("state_batches", "[]", fields=[
    F("first_offset", "int64"),
    F("last_offset", "int64"),
    F("delivery_state", "int8"),
    F("delivery_count", "int16"),
])

API = Api(
    key=84, name="ReadShareGroupState", valid=(0, 0), flexible=0,
    request=[
        F("group_id", "string"),
        F("topics", "[]", fields=[
            F("topic_id", "uuid"),
            F("partitions", "[]", fields=[
                F("partition", "int32"),
                F("leader_epoch", "int32"),
            ]),
        ]),
    ],
    response=[
        F("results", "[]", fields=[
            F("topic_id", "uuid"),
            F("partitions", "[]", fields=[
                F("partition", "int32"),
                F("error_code", "int16"),
                F("error_message", "string", nullable="0+", default=NULL),
                F("state_epoch", "int32"),
                F("start_offset", "int64"),
                STATE_BATCHES,
            ]),
        ]),
    ],
)
