"""InitializeShareGroupState (key 83): the group coordinator sets a share-partition's durable
state at its share coordinator: a new state epoch and start offset, nothing in flight
(AlterShareGroupOffsets is done this way). Broker to broker (KIP-932)."""
from ..schema import Api, F, NULL

API = Api(
    key=83, name="InitializeShareGroupState", valid=(0, 0), flexible=0,
    request=[
        F("group_id", "string"),
        F("topics", "[]", fields=[
            F("topic_id", "uuid"),
            F("partitions", "[]", fields=[
                F("partition", "int32"),
                F("state_epoch", "int32"),
                F("start_offset", "int64"),        # -1: the start offset is not initialised
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
