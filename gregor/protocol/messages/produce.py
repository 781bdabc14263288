"""Produce (key 0): append record batches to partitions."""
from ..schema import Api, F, NULL

API = Api(
    key=0, name="Produce", valid=(0, 11), flexible=9,
    request=[
        F("transactional_id", "string", v="3+", nullable="3+", default=NULL),
        F("acks", "int16"),
        F("timeout_ms", "int32"),
        F("topic_data", "[]", fields=[
            F("name", "string"),
            F("partition_data", "[]", fields=[
                F("index", "int32"),
                F("records", "records", nullable="0+"),
            ]),
        ]),
    ],
    response=[
        F("responses", "[]", fields=[
            F("name", "string"),
            F("partition_responses", "[]", fields=[
                F("index", "int32"),
                F("error_code", "int16"),
                F("base_offset", "int64"),
                F("log_append_time_ms", "int64", v="2+", default=-1),
                F("log_start_offset", "int64", v="5+", default=-1),
                F("record_errors", "[]", v="8+", fields=[
                    F("batch_index", "int32"),
                    F("batch_index_error_message", "string", nullable="0+", default=NULL),
                ]),
                F("error_message", "string", v="8+", nullable="8+", default=NULL),
                F("current_leader", "struct", v="10+", tagged="10+", tag=0, fields=[
                    F("leader_id", "int32", default=-1),
                    F("leader_epoch", "int32", default=-1),
                ]),
            ]),
        ]),
        F("throttle_time_ms", "int32", v="1+"),
        F("node_endpoints", "[]", v="10+", tagged="10+", tag=0, fields=[
            F("node_id", "int32"),
            F("host", "string"),
            F("port", "int32"),
            F("rack", "string", nullable="10+", default=NULL),
        ]),
    ],
)
