"""DescribeCluster (key 60): cluster id, controller and brokers."""
from ..schema import Api, F, NULL

API = Api(
    key=60, name="DescribeCluster", valid=(0, 1), flexible=0,
    request=[
        F("include_cluster_authorized_operations", "bool"),
        F("endpoint_type", "int8", v="1+", default=1),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=NULL),
        F("endpoint_type", "int8", v="1+", default=1),
        F("cluster_id", "string"),
        F("controller_id", "int32", default=-1),
        F("brokers", "[]", fields=[
            F("broker_id", "int32"),
            F("host", "string"),
            F("port", "int32"),
            F("rack", "string", nullable="0+", default=NULL),
        ]),
        F("cluster_authorized_operations", "int32", default=-2147483648),
    ],
)
