"""JoinGroup (11): join a group, or rejoin it for a new generation. The answer waits until the
rebalance completes (every known member rejoined, or the rebalance timeout passed)."""
from __future__ import annotations

from ..security.checks import GROUP, READ, allowed
from ._group_common import E, client_host, coordinator, later

API_KEY = 11
VERSIONS = (0, 9)


def handle(broker, ctx, request):
    v = ctx.api_version

    def build(r: dict) -> dict:
        body = {"throttle_time_ms": 0, "error_code": r["error_code"],
                "generation_id": r["generation_id"], "protocol_type": r["protocol_type"],
                "protocol_name": r["protocol_name"], "leader": r["leader"],
                "skip_assignment": False, "member_id": r["member_id"],
                "members": r["members"]}
        if v < 7 and body["protocol_name"] is None:
            body["protocol_name"] = ""          # not nullable before v7
        return body
    if not allowed(broker, ctx, READ, GROUP, request["group_id"]):
        return build({"error_code": E.GROUP_AUTHORIZATION_FAILED, "member_id": "",
                      "generation_id": -1, "protocol_type": None, "protocol_name": None,
                      "leader": "", "members": []})
    coord = coordinator(broker)
    if coord is None:
        return build({"error_code": E.COORDINATOR_NOT_AVAILABLE, "member_id":
                      request["member_id"], "generation_id": -1, "protocol_type": None,
                      "protocol_name": None, "leader": "", "members": []})
    fut, respond = later(build)
    session = request["session_timeout_ms"]
    rebalance = request["rebalance_timeout_ms"] if v >= 1 else session
    coord.join(request["group_id"], request["member_id"], request.get("group_instance_id"),
               request["protocol_type"],
               [(p["name"], bytes(p["metadata"])) for p in request["protocols"]],
               session, rebalance, ctx.client_id or "", client_host(ctx),
               require_known_member_id=v >= 4, respond=respond)
    return fut
