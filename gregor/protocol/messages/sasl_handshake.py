"""SaslHandshake (key 17): choose a SASL mechanism."""
from ..schema import Api, F

API = Api(
    key=17, name="SaslHandshake", valid=(0, 1), flexible=None,
    request=[
        F("mechanism", "string"),
    ],
    response=[
        F("error_code", "int16"),
        F("mechanisms", "[]string"),
    ],
)
