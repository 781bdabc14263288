"""EndTxn (key 26): commit or abort a transaction."""
from ..schema import Api, F

API = Api(
    key=26, name="EndTxn", valid=(0, 5), flexible=3,
    request=[
        F("transactional_id", "string"),
        F("producer_id", "int64"),
        F("producer_epoch", "int16"),
        F("committed", "bool"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("producer_id", "int64", v="5+", default=-1),
        F("producer_epoch", "int16", v="5+", default=-1),
    ],
)
