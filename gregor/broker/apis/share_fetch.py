"""ShareFetch (78): a share-group member acquires records of the partitions in its share
session and acknowledges, in the same request, records it was given before (KIP-932).

In Kafka's order: READ on the group; the share session by its epoch (0 opens, -1 closes, n
continues; see share/sessions.py); the piggybacked acknowledgements (each partition's result
in AcknowledgeErrorCode); then records are acquired, or the request waits up to MaxWaitMs for
some. Acknowledgements are written to `__share_group_state` before the answer leaves. Like
Kafka, the broker does not check the member against the group's assignment here: a session is
the member's, and records are handed to whoever holds it.
v1 (librdkafka) and v2 (Kafka 4.2's clients: a strict record limit, RENEW acknowledgements).
"""
from __future__ import annotations

import asyncio

from ..quotas.enforcement import OVER_FETCH_QUOTA
from ..security.checks import GROUP, READ, allowed
from ..share import acks
from ..share.fetching import DelayedShareFetch, acquire, as_topics, entry
from ..share.sessions import FINAL_EPOCH, INITIAL_EPOCH, SessionError
from ._share_common import E, after_loading, share_service

API_KEY = 78
VERSIONS = (1, 2)
STRICT = 1          # ShareAcquireMode: record_limit (KIP-1206)


def _top(code: int, message=None, lock_ms: int = 0) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message,
            "acquisition_lock_timeout_ms": lock_ms, "responses": [], "node_endpoints": []}


def _pairs(items) -> set:
    return {(bytes(t["topic_id"]), p if isinstance(p, int) else p["partition_index"])
            for t in items for p in t["partitions"]}


def _has_acks(request) -> bool:
    return any(p.get("acknowledgement_batches") for t in request["topics"]
               for p in t["partitions"])


def handle(broker, ctx, request):
    return after_loading(broker, ctx, request, lambda: _handle(broker, ctx, request))


def _handle(broker, ctx, request):
    group_id, member_id = request["group_id"] or "", request["member_id"] or ""
    epoch = request["share_session_epoch"]
    v = ctx.api_version
    renew = v >= 2 and request.get("is_renew_ack")
    if not allowed(broker, ctx, READ, GROUP, group_id):
        return _top(E.GROUP_AUTHORIZATION_FAILED)
    service = share_service(broker)
    if service is None:
        return _top(E.COORDINATOR_NOT_AVAILABLE)
    cfg = service.settings(group_id)             # once per request: it is not cheap
    lock_ms = cfg["record_lock_duration_ms"]
    if not group_id or not member_id or len(member_id) > 36:
        return _top(E.INVALID_REQUEST, "GroupId and MemberId (at most 36 characters) are "
                                       "required", lock_ms)
    if renew and (request["max_bytes"] or request["min_bytes"] or request["max_records"]
                  or request["max_wait_ms"]):
        return _top(E.INVALID_REQUEST, "a ShareFetch with IsRenewAck fetches nothing: "
                                       "MaxBytes, MinBytes, MaxRecords and MaxWaitMs must be 0",
                    lock_ms)
    wanted = _pairs(request["topics"])
    try:
        if epoch == INITIAL_EPOCH:
            if _has_acks(request):
                return _top(E.INVALID_REQUEST, "a ShareFetch opening a share session "
                                               "(epoch 0) can't acknowledge records", lock_ms)
            session = service.sessions.open(group_id, member_id, ctx.connection, wanted)
        else:
            session = service.sessions.check(group_id, member_id, epoch)
    except SessionError as e:
        return _top(e.code, e.message, lock_ms)
    results, dirty = acks.apply(service, broker, ctx, group_id, member_id, request["topics"],
                                renew, cfg)
    full = epoch == INITIAL_EPOCH
    if epoch == FINAL_EPOCH:
        service.sessions.close(group_id, member_id)
        service.release(group_id, member_id, session.partitions)
        return _answer(service, dirty, results, {}, lock_ms)
    session.partitions |= wanted
    session.partitions -= _pairs(request["forgotten_topics_data"])
    if not full:
        service.sessions.advance(session)      # a new session already expects epoch 1
    if renew or request.get(OVER_FETCH_QUOTA):
        # RENEW fetches nothing; a member over its consumer_byte_rate acquires nothing until
        # its throttle time has passed (the response says how long)
        return _answer(service, dirty, results, {}, lock_ms)
    strict = v >= 2 and request.get("share_acquire_mode") == STRICT

    def attempt():
        if service.sessions.get(group_id, member_id) is not session:
            return {}, 1                  # replaced or closed meanwhile: answer with nothing
        return acquire(service, broker, ctx, session, group_id, member_id,
                       request["max_records"], request["max_bytes"], strict, cfg)
    entries, taken = attempt()
    if full:
        for tid, pidx in session.partitions:
            entries.setdefault((tid, pidx), entry(pidx))
    if taken or results or request["max_wait_ms"] <= 0 or not session.partitions:
        return _answer(service, dirty, results, entries, lock_ms)
    fut = asyncio.get_running_loop().create_future()
    op = DelayedShareFetch(request["max_wait_ms"], attempt,
                           lambda more: fut.done() or fut.set_result({**entries, **more}))
    keys = [(service.topic_name(t), p) for t, p in session.partitions]
    broker.replica_manager.fetch_purgatory.try_complete_else_watch(
        op, [k for k in keys if k[0] is not None])

    async def later():
        got = await fut
        answer = _answer(service, dirty, results, got, lock_ms)
        return (await answer) if isinstance(answer, asyncio.Future) else answer
    return asyncio.ensure_future(later())


def _answer(service, dirty, results, entries, lock_ms):
    """The response once the acknowledgements' writes are committed (a dict at once when
    they already are, else a future)."""
    def build(final: dict) -> dict:
        for (tid, pidx), (code, message) in final.items():
            e = entries.setdefault((tid, pidx), entry(pidx))
            e["acknowledge_error_code"] = code
            e["acknowledge_error_message"] = message
        return {**_top(E.NONE, None, lock_ms), "responses": as_topics(entries)}
    return acks.when_persisted(service, dirty, results, build)
