"""ApiVersions (18): the versions of each API this broker really serves.

The other APIs are advertised at non-flexible versions (the highest before each API's first
flexible version): every client we test negotiates down to them, and they keep kafka-python's
broker version guess modern (Metadata 5+, Fetch 11, Produce 8 read as Kafka >= 2.3).
ApiVersions itself is served up to v3 (flexible; the response header stays v0), which
librdkafka sends first. A client asking with a version we do not know (kafka-python starts at
v4) gets UNSUPPORTED_VERSION in a v0 body listing our versions, on a connection that stays
open; the server sends that reply (unsupported_version_body below).
"""
from __future__ import annotations

import re

from ...protocol.errors import ErrorCode

API_KEY = 18
# Kafka's rule for v3+ client software names and versions (KIP-511).
_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")
VERSIONS = (0, 3)


def handle(broker, ctx, request) -> dict:
    if ctx.api_version >= 3 and not (
            _SOFTWARE.match(request["client_software_name"] or "")
            and _SOFTWARE.match(request["client_software_version"] or "")):
        return {"error_code": ErrorCode.INVALID_REQUEST, "api_keys": broker.api_version_table,
                "throttle_time_ms": 0}
    body = {"error_code": ErrorCode.NONE, "api_keys": broker.api_version_table,
            "throttle_time_ms": 0}
    if ctx.api_version >= 3:
        body.update(_features(broker))
    return body


def _features(broker) -> dict:
    """KIP-584 features (tagged fields of v3+): `share.version` 1 while the share-group APIs
    are served, as Kafka 4.2 finalizes it by default (Java clients check it)."""
    if not any(k["api_key"] == 76 for k in broker.api_version_table):
        return {}
    return {"supported_features": [{"name": "share.version", "min_version": 0,
                                    "max_version": 1}],
            "finalized_features_epoch": 0,
            "finalized_features": [{"name": "share.version", "max_version_level": 1,
                                    "min_version_level": 1}]}


def unsupported_version_body(broker) -> dict:
    return {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": broker.api_version_table}
