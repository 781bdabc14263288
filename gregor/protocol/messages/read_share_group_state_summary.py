"""ReadShareGroupStateSummary (key 87): the group coordinator reads share-partitions' state
epoch and start offset from their share coordinator (DescribeShareGroupOffsets). Broker to
broker (KIP-932). v0 as in the schema files this project works from; Kafka 4.2's v0 also
answers a LeaderEpoch and its v1 a DeliveryCompleteCount (KIP-1226), not served here."""
from ..schema import Api, F, NULL

API = Api(
    key=87, name="ReadShareGroupStateSummary", valid=(0, 0), flexible=0,
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
            ]),
        ]),
    ],
)
