"""StopReplica (key 5): the controller tells a broker to stop fetching for (and, with delete,
to delete) some of its replicas: a deleted topic, or a replica moved away (inter-broker,
ZooKeeper mode). Described in every version; gregor serves and sends v3+ (per-partition
leader epoch and delete flag, apis/stop_replica.py)."""
from ..schema import Api, F

API = Api(
    key=5, name="StopReplica", valid=(0, 4), flexible=2,
    request=[
        F("controller_id", "int32"),
        F("is_kraft_controller", "bool", v="4+", default=False),
        F("controller_epoch", "int32"),
        F("broker_epoch", "int64", v="1+", default=-1),
        F("delete_partitions", "bool", v="0-2"),
        F("ungrouped_partitions", "[]", v="0", fields=[
            F("topic_name", "string", v="0"),
            F("partition_index", "int32", v="0"),
        ]),
        F("topics", "[]", v="1-2", fields=[
            F("name", "string", v="1-2"),
            F("partition_indexes", "[]int32", v="1-2"),
        ]),
        F("topic_states", "[]", v="3+", fields=[
            F("topic_name", "string", v="3+"),
            F("partition_states", "[]", v="3+", fields=[
                F("partition_index", "int32", v="3+"),
                F("leader_epoch", "int32", v="3+", default=-1),
                F("delete_partition", "bool", v="3+"),
            ]),
        ]),
    ],
    response=[
        F("error_code", "int16"),
        F("partition_errors", "[]", fields=[
            F("topic_name", "string"),
            F("partition_index", "int32"),
            F("error_code", "int16"),
        ]),
    ],
)
