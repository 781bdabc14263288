"""ControlledShutdown (key 7): a broker asks the controller to move its leaderships away
before it stops (inter-broker). v0 was sent with request header v0 (no client id), which the
engine does not speak: the broker serves v1-v3 only (apis/controlled_shutdown.py)."""
from ..schema import Api, F

API = Api(
    key=7, name="ControlledShutdown", valid=(0, 3), flexible=3,
    request=[
        F("broker_id", "int32"),
        F("broker_epoch", "int64", v="2+", default=-1),
    ],
    response=[
        F("error_code", "int16"),
        F("remaining_partitions", "[]", fields=[
            F("topic_name", "string"),
            F("partition_index", "int32"),
        ]),
    ],
)
