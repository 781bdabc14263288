"""DescribeUserScramCredentials (50): the SCRAM mechanisms and iterations of users (KIP-554);
never salts or keys. Rules and texts: security/scram_admin.py."""
from __future__ import annotations

import logging

from ...protocol.errors import ErrorCode
from ..security import scram_admin
from ..security.cluster_checks import cluster_operation_allowed

log = logging.getLogger("gregor.broker.security")

API_KEY = 50
VERSIONS = (0, 0)


def handle(broker, ctx, request) -> dict:
    if not cluster_operation_allowed(broker, ctx, "DESCRIBE"):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "error_message": None, "results": []}
    users = request.get("users")
    names = None if users is None else [u["name"] for u in users]

    try:
        return scram_admin.describe(broker.security.credentials, names)
    except Exception as e:                   # the store's error names the file
        log.error("reading SCRAM credentials failed: %s", e)
        return {"throttle_time_ms": 0, "error_code": ErrorCode.UNKNOWN_SERVER_ERROR,
                "error_message": f"the broker could not read the credentials: {e}",
                "results": []}
