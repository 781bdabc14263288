"""CreateTopics (key 19): create topics with partition counts, replication and configs."""
from ..schema import Api, F

API = Api(
    key=19, name="CreateTopics", valid=(0, 7), flexible=5,
    request=[
        F("topics", "[]", fields=[
            F("name", "string"),
            F("num_partitions", "int32"),
            F("replication_factor", "int16"),
            F("assignments", "[]", fields=[
                F("partition_index", "int32"),
                F("broker_ids", "[]int32"),
            ]),
            F("configs", "[]", fields=[
                F("name", "string"),
                F("value", "string", nullable="0+"),
            ]),
        ]),
        F("timeout_ms", "int32", default=60000),
        F("validate_only", "bool", v="1+"),
    ],
    response=[
        F("throttle_time_ms", "int32", v="2+"),
        F("topics", "[]", fields=[
            F("name", "string"),
            F("topic_id", "uuid", v="7+"),
            F("error_code", "int16"),
            F("error_message", "string", v="1+", nullable="0+"),
            F("topic_config_error_code", "int16", v="5+", tagged="5+", tag=0),
            F("num_partitions", "int32", v="5+", default=-1),
            F("replication_factor", "int16", v="5+", default=-1),
            F("configs", "[]", v="5+", nullable="5+", fields=[
                F("name", "string"),
                F("value", "string", nullable="0+"),
                F("read_only", "bool"),
                F("config_source", "int8", default=-1),
                F("is_sensitive", "bool"),
            ]),
        ]),
    ],
)
