"""TxnOffsetCommit (key 28): offsets committed as part of a transaction (pending until its
markers are written)."""
from ..schema import Api, F, NULL

API = Api(
    key=28, name="TxnOffsetCommit", valid=(0, 4), flexible=3,
    request=[
        F("transactional_id", "string"),
        F("group_id", "string"),
        F("producer_id", "int64"),
        F("producer_epoch", "int16"),
        F("generation_id", "int32", v="3+", default=-1),
        F("member_id", "string", v="3+", default=""),
        F("group_instance_id", "string", v="3+", nullable="3+", default=NULL),
        F("topics", "[]", fields=[
            F("name", "string"),
            F("partitions", "[]", fields=[
                F("partition_index", "int32"),
                F("committed_offset", "int64"),
                F("committed_leader_epoch", "int32", v="2+", default=-1),
                F("committed_metadata", "string", nullable="0+"),
            ]),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("topics", "[]", fields=[
            F("name", "string"),
            F("partitions", "[]", fields=[
                F("partition_index", "int32"),
                F("error_code", "int16"),
            ]),
        ]),
    ],
)
