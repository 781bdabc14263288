"""ShareAcknowledge (79): a share-group member accepts, releases, rejects (or, v2, renews the
lock of) records it acquired, outside a ShareFetch. It continues a share session (epoch n)
or closes it (epoch -1, after which what the member still holds comes back); it can't open
one (INVALID_SHARE_SESSION_EPOCH at epoch 0). Answered once the new state is written."""
from __future__ import annotations

from ..security.checks import GROUP, READ, allowed
from ..share import acks
from ..share.fetching import NO_LEADER
from ..share.sessions import FINAL_EPOCH, INITIAL_EPOCH, SessionError
from ._share_common import E, after_loading, share_service

API_KEY = 79
VERSIONS = (1, 2)


def _top(code: int, message=None, lock_ms: int = 0) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message,
            "acquisition_lock_timeout_ms": lock_ms, "responses": [], "node_endpoints": []}


def handle(broker, ctx, request):
    return after_loading(broker, ctx, request, lambda: _handle(broker, ctx, request))


def _handle(broker, ctx, request):
    group_id, member_id = request["group_id"] or "", request["member_id"] or ""
    epoch = request["share_session_epoch"]
    renew = ctx.api_version >= 2 and request.get("is_renew_ack")
    if not allowed(broker, ctx, READ, GROUP, group_id):
        return _top(E.GROUP_AUTHORIZATION_FAILED)
    service = share_service(broker)
    if service is None:
        return _top(E.COORDINATOR_NOT_AVAILABLE)
    lock_ms = service.settings(group_id)["record_lock_duration_ms"]
    if not group_id or not member_id or len(member_id) > 36:
        return _top(E.INVALID_REQUEST, "GroupId and MemberId (at most 36 characters) are "
                                       "required", lock_ms)
    if epoch == INITIAL_EPOCH:
        return _top(E.INVALID_SHARE_SESSION_EPOCH, "ShareAcknowledge can't open a share "
                                                   "session; send a ShareFetch at epoch 0",
                    lock_ms)
    try:
        session = service.sessions.check(group_id, member_id, epoch)
    except SessionError as e:
        return _top(e.code, e.message, lock_ms)
    results, dirty = acks.apply(service, broker, ctx, group_id, member_id, request["topics"],
                                renew)
    for t in request["topics"]:              # a partition named without batches still answers
        for p in t["partitions"]:
            results.setdefault((bytes(t["topic_id"]), p["partition_index"]), (E.NONE, None))
    if epoch == FINAL_EPOCH:
        service.sessions.close(group_id, member_id)
        service.release(group_id, member_id, session.partitions)
    else:
        service.sessions.advance(session)

    def build(final: dict) -> dict:
        topics: dict = {}
        for (tid, pidx), (code, message) in sorted(final.items()):
            topics.setdefault(tid, []).append(
                {"partition_index": pidx, "error_code": code, "error_message": message,
                 "current_leader": dict(NO_LEADER)})
        return {**_top(E.NONE, None, lock_ms),
                "responses": [{"topic_id": t, "partitions": ps} for t, ps in topics.items()]}
    return acks.when_persisted(service, dirty, results, build)
