"""AlterUserScramCredentials (51): add, replace or remove SCRAM credentials (KIP-554), stored
durably before the answer (the entity config store: security/credentials.py). Rules and
texts: security/scram_admin.py."""
from __future__ import annotations

import asyncio
import logging

from ...protocol.errors import ErrorCode
from ..security import scram_admin
from ..security.cluster_checks import cluster_operation_allowed

API_KEY = 51
VERSIONS = (0, 0)

log = logging.getLogger("gregor.broker.security")


def handle(broker, ctx, request):
    deletions, upsertions = request["deletions"], request["upsertions"]
    if not cluster_operation_allowed(broker, ctx, "ALTER"):
        users = dict.fromkeys(a["name"] for a in [*deletions, *upsertions])
        return {"throttle_time_ms": 0, "results": [
            {"user": u, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
             "error_message": None} for u in users]}
    credentials = broker.security.credentials
    results, changes = scram_admin.plan_alter(credentials, deletions, upsertions)
    if not changes:
        return {"throttle_time_ms": 0, "results": results}

    async def write():
        try:
            await credentials.write(changes)
        except Exception as e:               # the store's error names the file or znode
            log.error("storing SCRAM credentials of %s failed: %s", sorted(changes), e)
            for r in results:
                if r["user"] in changes:
                    r.update(error_code=ErrorCode.UNKNOWN_SERVER_ERROR,
                             error_message=f"the broker could not store the credential: {e}")
            return {"throttle_time_ms": 0, "results": results}
        log.info("%s changed the SCRAM credentials of %s", ctx.principal,
                 ", ".join(sorted(changes)))
        return {"throttle_time_ms": 0, "results": results}
    return asyncio.ensure_future(write())
