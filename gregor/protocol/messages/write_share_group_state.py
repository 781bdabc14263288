"""WriteShareGroupState (key 85): a share-partition leader writes the durable state of a
share-partition through its share coordinator, which answers once it is committed to
`__share_group_state`. Broker to broker (KIP-932); v0 (v1, Kafka 4.2, adds
DeliveryCompleteCount, not in the schema files this project works from)."""
from ..schema import Api, F, NULL
from .read_share_group_state import STATE_BATCHES

API = Api(
    key=85, name="WriteShareGroupState", valid=(0, 0), flexible=0,
    request=[
        F("group_id", "string"),
        F("topics", "[]", fields=[
            F("topic_id", "uuid"),
            F("partitions", "[]", fields=[
                F("partition", "int32"),
                F("state_epoch", "int32"),
                F("leader_epoch", "int32"),
                F("start_offset", "int64"),
                STATE_BATCHES,
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
            ]),
        ]),
    ],
)
