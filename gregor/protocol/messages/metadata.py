"""Metadata (key 3): brokers, topics, partitions and their leaders (v13: KIP-1102's top-level
error code)."""
from ..schema import Api, F, NULL

API = Api(
    key=3, name="Metadata", valid=(0, 13), flexible=9,
    request=[
        F("topics", "[]", nullable="1+", fields=[
            F("topic_id", "uuid", v="10+"),
            F("name", "string", nullable="10+"),
        ]),
        F("allow_auto_topic_creation", "bool", v="4+", default=True),
        F("include_cluster_authorized_operations", "bool", v="8-10"),
        F("include_topic_authorized_operations", "bool", v="8+"),
    ],
    response=[
        F("throttle_time_ms", "int32", v="3+"),
        F("brokers", "[]", fields=[
            F("node_id", "int32"),
            F("host", "string"),
            F("port", "int32"),
            F("rack", "string", v="1+", nullable="1+", default=NULL),
        ]),
        F("cluster_id", "string", v="2+", nullable="2+", default=NULL),
        F("controller_id", "int32", v="1+", default=-1),
        F("topics", "[]", fields=[
            F("error_code", "int16"),
            F("name", "string", nullable="12+"),
            F("topic_id", "uuid", v="10+"),
            F("is_internal", "bool", v="1+"),
            F("partitions", "[]", fields=[
                F("error_code", "int16"),
                F("partition_index", "int32"),
                F("leader_id", "int32"),
                F("leader_epoch", "int32", v="7+", default=-1),
                F("replica_nodes", "[]int32"),
                F("isr_nodes", "[]int32"),
                F("offline_replicas", "[]int32", v="5+"),
            ]),
            F("topic_authorized_operations", "int32", v="8+", default=-2147483648),
        ]),
        F("cluster_authorized_operations", "int32", v="8-10", default=-2147483648),
        # KIP-1102: a top-level error (REBOOTSTRAP_REQUIRED); gregor never needs one
        F("error_code", "int16", v="13+"),
    ],
)
