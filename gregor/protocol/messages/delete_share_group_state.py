"""DeleteShareGroupState (key 86): the group coordinator deletes share-partitions' durable
state at their share coordinator (DeleteShareGroupOffsets, DeleteGroups of a share group).
Broker to broker (KIP-932)."""
from ..schema import Api, F, NULL

API = Api(
    key=86, name="DeleteShareGroupState", valid=(0, 0), flexible=0,
    request=[
        F("group_id", "string"),
        F("topics", "[]", fields=[
            F("topic_id", "uuid"),
            F("partitions", "[]", fields=[
                F("partition", "int32"),
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
