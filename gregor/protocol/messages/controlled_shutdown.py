"""ControlledShutdown (key 7): a broker asks the controller to move its leaderships away
before it stops (inter-broker). v0 used request header v0 (no client id): not described."""
from ..schema import Api, F

API = Api(
    key=7, name="ControlledShutdown", valid=(1, 3), flexible=3,
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
