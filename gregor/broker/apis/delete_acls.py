"""DeleteAcls (31): remove the ACLs matching each filter; each filter's result lists the
ACLs it removed (an ACL matching several filters is listed under the first). Needs ALTER on
the cluster; without an authorizer every result is SECURITY_DISABLED. Version 0 filters are
LITERAL: they never remove PREFIXED ACLs."""
from __future__ import annotations

from ..security.checks import ALTER
from ._acl_common import E, binding_fields, filter_of, refusal
from ._txn_common import respond_later

API_KEY = 31
VERSIONS = (0, 3)


def handle(broker, ctx, request):
    filters = request["filters"]
    refused = refusal(broker, ctx, ALTER)
    if refused is not None:
        code, message = refused
        return {"throttle_time_ms": 0, "filter_results": [
            {"error_code": code, "error_message": message, "matching_acls": []}
            for _ in filters]}

    def build(results) -> dict:
        out = []
        for error, removed in results:
            out.append({
                "error_code": E[error[0]] if error else E.NONE,
                "error_message": error[1] if error else None,
                "matching_acls": [{"error_code": E.NONE, "error_message": None,
                                   **binding_fields(b)} for b in removed]})
        return {"throttle_time_ms": 0, "filter_results": out}
    return respond_later(broker.acl_service.delete([filter_of(f) for f in filters]), build)
