"""UpdateMetadata (key 6): the controller tells every broker the live brokers (with every
listener) and partition states, which each broker answers Metadata from (inter-broker,
ZooKeeper mode). Described in every version; gregor serves and sends v5+ (topics grouped,
apis/update_metadata.py); v7+ carries topic ids."""
from ..schema import Api, F

_STATE = [
    F("topic_name", "string", v="0-4"),
    F("partition_index", "int32"),
    F("controller_epoch", "int32"),
    F("leader", "int32"),
    F("leader_epoch", "int32"),
    F("isr", "[]int32"),
    F("zk_version", "int32"),
    F("replicas", "[]int32"),
    F("offline_replicas", "[]int32", v="4+"),
]

API = Api(
    key=6, name="UpdateMetadata", valid=(0, 8), flexible=6,
    request=[
        F("controller_id", "int32"),
        F("is_kraft_controller", "bool", v="8+", default=False),
        F("type", "int8", v="8+", tagged="8+", tag=0, default=0),
        F("controller_epoch", "int32"),
        F("broker_epoch", "int64", v="5+", default=-1),
        F("ungrouped_partition_states", "[]", v="0-4", fields=_STATE),
        F("topic_states", "[]", v="5+", fields=[
            F("topic_name", "string", v="5+"),
            F("topic_id", "uuid", v="7+"),
            F("partition_states", "[]", v="5+", fields=_STATE),
        ]),
        F("live_brokers", "[]", fields=[
            F("id", "int32"),
            F("v0_host", "string", v="0"),
            F("v0_port", "int32", v="0"),
            F("endpoints", "[]", v="1+", fields=[
                F("port", "int32", v="1+"),
                F("host", "string", v="1+"),
                F("listener", "string", v="3+"),
                F("security_protocol", "int16", v="1+"),
            ]),
            F("rack", "string", v="2+", nullable="0+"),
        ]),
    ],
    response=[
        F("error_code", "int16"),
    ],
)
