"""Fetch (key 1): read record batches from partitions (consumers and followers)."""
from ..schema import Api, F, NULL

API = Api(
    key=1, name="Fetch", valid=(0, 17), flexible=12,
    request=[
        F("cluster_id", "string", v="12+", nullable="12+", tagged="12+", tag=0, default=NULL),
        F("replica_id", "int32", v="0-14", default=-1),
        F("replica_state", "struct", v="15+", tagged="15+", tag=1, fields=[
            F("replica_id", "int32", default=-1),
            F("replica_epoch", "int64", default=-1),
        ]),
        F("max_wait_ms", "int32"),
        F("min_bytes", "int32"),
        F("max_bytes", "int32", v="3+", default=0x7fffffff),
        F("isolation_level", "int8", v="4+"),
        F("session_id", "int32", v="7+"),
        F("session_epoch", "int32", v="7+", default=-1),
        F("topics", "[]", fields=[
            F("topic", "string", v="0-12"),
            F("topic_id", "uuid", v="13+"),
            F("partitions", "[]", fields=[
                F("partition", "int32"),
                F("current_leader_epoch", "int32", v="9+", default=-1),
                F("fetch_offset", "int64"),
                F("last_fetched_epoch", "int32", v="12+", default=-1),
                F("log_start_offset", "int64", v="5+", default=-1),
                F("partition_max_bytes", "int32"),
                F("replica_directory_id", "uuid", v="17+", tagged="17+", tag=0),
            ]),
        ]),
        F("forgotten_topics_data", "[]", v="7+", fields=[
            F("topic", "string", v="7-12"),
            F("topic_id", "uuid", v="13+"),
            F("partitions", "[]int32"),
        ]),
        F("rack_id", "string", v="11+"),
    ],
    response=[
        F("throttle_time_ms", "int32", v="1+"),
        F("error_code", "int16", v="7+"),
        F("session_id", "int32", v="7+"),
        F("responses", "[]", fields=[
            F("topic", "string", v="0-12"),
            F("topic_id", "uuid", v="13+"),
            F("partitions", "[]", fields=[
                F("partition_index", "int32"),
                F("error_code", "int16"),
                F("high_watermark", "int64"),
                F("last_stable_offset", "int64", v="4+", default=-1),
                F("log_start_offset", "int64", v="5+", default=-1),
                F("diverging_epoch", "struct", v="12+", tagged="12+", tag=0, fields=[
                    F("epoch", "int32", default=-1),
                    F("end_offset", "int64", default=-1),
                ]),
                F("current_leader", "struct", v="12+", tagged="12+", tag=1, fields=[
                    F("leader_id", "int32", default=-1),
                    F("leader_epoch", "int32", default=-1),
                ]),
                F("snapshot_id", "struct", v="12+", tagged="12+", tag=2, fields=[
                    F("end_offset", "int64", default=-1),
                    F("epoch", "int32", default=-1),
                ]),
                F("aborted_transactions", "[]", v="4+", nullable="4+", fields=[
                    F("producer_id", "int64"),
                    F("first_offset", "int64"),
                ]),
                F("preferred_read_replica", "int32", v="11+", default=-1),
                F("records", "records", nullable="0+"),
            ]),
        ]),
        F("node_endpoints", "[]", v="16+", tagged="16+", tag=0, fields=[
            F("node_id", "int32"),
            F("host", "string"),
            F("port", "int32"),
            F("rack", "string", nullable="0+", default=NULL),
        ]),
    ],
)
