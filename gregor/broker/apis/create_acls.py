"""CreateAcls (30): add ACL bindings, each answered on its own (INVALID_REQUEST with Kafka's
texts for an empty name, a CLUSTER resource not named kafka-cluster, a '/' in a name, a
malformed principal, or filter-only values). Needs ALTER on the cluster; without an
authorizer every result is SECURITY_DISABLED. The answer waits until the ACLs are stored."""
from __future__ import annotations

from ..security.checks import ALTER
from ._acl_common import E, binding_of, refusal
from ._txn_common import respond_later

API_KEY = 30
VERSIONS = (0, 3)


def handle(broker, ctx, request):
    creations = request["creations"]
    refused = refusal(broker, ctx, ALTER)
    if refused is not None:
        code, message = refused
        return {"throttle_time_ms": 0, "results": [
            {"error_code": code, "error_message": message} for _ in creations]}

    def build(results) -> dict:
        out = []
        for r in results:
            if r is None:
                out.append({"error_code": E.NONE, "error_message": None})
            else:
                out.append({"error_code": E[r[0]], "error_message": r[1]})
        return {"throttle_time_ms": 0, "results": out}
    return respond_later(broker.acl_service.create([binding_of(c) for c in creations]), build)
