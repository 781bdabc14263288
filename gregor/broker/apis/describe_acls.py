"""DescribeAcls (29): the ACLs matching a filter. Needs DESCRIBE on the cluster; without an
authorizer the answer is SECURITY_DISABLED. Version 0 has no pattern type: its filter is
LITERAL, so it never sees PREFIXED ACLs (as Kafka)."""
from __future__ import annotations

from ...protocol.acl import filter_problem
from ..security.checks import DESCRIBE
from ._acl_common import E, filter_of, refusal, resources_of

API_KEY = 29
VERSIONS = (0, 3)


def handle(broker, ctx, request) -> dict:
    body = {"throttle_time_ms": 0, "error_code": E.NONE, "error_message": None,
            "resources": []}
    refused = refusal(broker, ctx, DESCRIBE)
    if refused is not None:
        body["error_code"], body["error_message"] = refused
        return body
    flt = filter_of(request)
    problem = filter_problem(flt)
    if problem is not None:
        body["error_code"], body["error_message"] = E.INVALID_REQUEST, problem
        return body
    body["resources"] = resources_of(broker.acl_service.describe(flt))
    return body
