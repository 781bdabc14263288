"""SaslAuthenticate (36) reaching the broker's APIs: no SASL exchange is under way on this
connection (a listener without SASL, or already authenticated), so it is ILLEGAL_SASL_STATE
with KafkaApis' text."""
from __future__ import annotations

from ...protocol.errors import ErrorCode

API_KEY = 36
VERSIONS = (0, 2)


def handle(broker, ctx, request) -> dict:
    return {"error_code": ErrorCode.ILLEGAL_SASL_STATE,
            "error_message": "SaslAuthenticate request received after successful "
                             "authentication",
            "auth_bytes": b"", "session_lifetime_ms": 0}
