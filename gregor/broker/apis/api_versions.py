"""ApiVersions (18): the versions of each API this broker really serves.

We advertise non-flexible versions only (the highest ones before each API's first flexible
version): every client we test negotiates down to them, and they keep kafka-python's broker
version guess modern (Metadata 5+, Fetch 11, Produce 8 read as Kafka >= 2.3). A client asking
with a version we do not know (kafka-python starts at v4, librdkafka at v3) gets
UNSUPPORTED_VERSION in a v0 body listing our versions, on a connection that stays open; that
reply is built by the server (see Broker.unsupported_api_versions_response).
"""
from __future__ import annotations

from ...protocol.errors import ErrorCode

API_KEY = 18
VERSIONS = (0, 3)


def handle(broker, ctx, request) -> dict:
    return {"error_code": ErrorCode.NONE, "api_keys": broker.api_version_table,
            "throttle_time_ms": 0}


def unsupported_version_body(broker) -> dict:
    return {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": broker.api_version_table}
