"""AlterPartition (key 56, KIP-497): a partition leader asks the controller to change the
partition's ISR (inter-broker). v0-1 name topics, v2+ use topic ids; v3 (KIP-903) gives each
new ISR member's broker epoch, so a replica that restarted since it caught up is refused."""
from ..schema import Api, F

API = Api(
    key=56, name="AlterPartition", valid=(0, 3), flexible=0,
    request=[
        F("broker_id", "int32"),
        F("broker_epoch", "int64", default=-1),
        F("topics", "[]", fields=[
            F("topic_name", "string", v="0-1"),
            F("topic_id", "uuid", v="2+"),
            F("partitions", "[]", fields=[
                F("partition_index", "int32"),
                F("leader_epoch", "int32"),
                F("new_isr", "[]int32", v="0-2"),
                F("new_isr_with_epochs", "[]", v="3+", fields=[
                    F("broker_id", "int32"),
                    F("broker_epoch", "int64", default=-1),
                ]),
                F("leader_recovery_state", "int8", v="1+", default=0),
                F("partition_epoch", "int32"),
            ]),
        ]),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("topics", "[]", fields=[
            F("topic_name", "string", v="0-1"),
            F("topic_id", "uuid", v="2+"),
            F("partitions", "[]", fields=[
                F("partition_index", "int32"),
                F("error_code", "int16"),
                F("leader_id", "int32"),
                F("leader_epoch", "int32"),
                F("isr", "[]int32"),
                F("leader_recovery_state", "int8", v="1+", default=0),
                F("partition_epoch", "int32"),
            ]),
        ]),
    ],
)
