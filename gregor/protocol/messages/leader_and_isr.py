"""LeaderAndIsr (key 4): the controller tells a broker which of its replicas lead and which
follow (inter-broker, ZooKeeper mode). Described in every version; gregor serves and sends
v2+ (topics grouped; v0-1 carried ungrouped states, apis/leader_and_isr.py); v5+ adds topic
ids and the request type (1 = full: every replica the broker holds, so it may delete the ones
not listed)."""
from ..schema import Api, F

_STATE = [
    F("topic_name", "string", v="0-1"),
    F("partition_index", "int32"),
    F("controller_epoch", "int32"),
    F("leader", "int32"),
    F("leader_epoch", "int32"),
    F("isr", "[]int32"),
    F("partition_epoch", "int32"),
    F("replicas", "[]int32"),
    F("adding_replicas", "[]int32", v="3+", default=[]),
    F("removing_replicas", "[]int32", v="3+", default=[]),
    F("is_new", "bool", v="1+", default=False),
    F("leader_recovery_state", "int8", v="6+", default=0),
]

_PARTITION_ERROR = [
    F("topic_name", "string", v="0-4"),
    F("partition_index", "int32"),
    F("error_code", "int16"),
]

API = Api(
    key=4, name="LeaderAndIsr", valid=(0, 7), flexible=4,
    request=[
        F("controller_id", "int32"),
        F("is_kraft_controller", "bool", v="7+", default=False),
        F("controller_epoch", "int32"),
        F("broker_epoch", "int64", v="2+", default=-1),
        F("type", "int8", v="5+", default=0),
        F("ungrouped_partition_states", "[]", v="0-1", fields=_STATE),
        F("topic_states", "[]", v="2+", fields=[
            F("topic_name", "string", v="2+"),
            F("topic_id", "uuid", v="5+"),
            F("partition_states", "[]", v="2+", fields=_STATE),
        ]),
        F("live_leaders", "[]", fields=[
            F("broker_id", "int32"),
            F("host_name", "string"),
            F("port", "int32"),
        ]),
    ],
    response=[
        F("error_code", "int16"),
        F("partition_errors", "[]", v="0-4", fields=_PARTITION_ERROR),
        F("topics", "[]", v="5+", fields=[
            F("topic_id", "uuid", v="5+"),
            F("partition_errors", "[]", v="5+", fields=_PARTITION_ERROR),
        ]),
    ],
)
