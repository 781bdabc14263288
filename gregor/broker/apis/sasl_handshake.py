"""SaslHandshake (17) reaching the broker's APIs: on a listener without SASL, or on a connection
already authenticated (and not starting re-authentication), KafkaApis answers
ILLEGAL_SASL_STATE with no mechanisms. SASL listeners answer the real handshake in
security/sasl/authenticator.py before requests get here."""
from __future__ import annotations

from ...protocol.errors import ErrorCode

API_KEY = 17
VERSIONS = (0, 1)          # never higher: clients <= 2.4 mis-negotiate (KAFKA-9577)


def handle(broker, ctx, request) -> dict:
    return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}
