"""Throttling requests that exceed their quotas, as Kafka's broker does (KIP-13, KIP-124, KIP-219).

The server hands each request to `QuotaEnforcer.handle` instead of the API's handler, but only
while some quota is configured (Server.quotas is None otherwise: then a request costs one
attribute check). For each request of a client (not the controller's requests, not followers'
fetches, not the broker's own in-process requests):

- Produce: the request's size counts against producer_byte_rate;
- Fetch: a consumer's fetch size is capped at what its quota allows in one window, and the
  response's size counts against consumer_byte_rate once it is ready (after any long poll);
- ShareFetch: the same cap and count, except that records once acquired are always sent (a
  dropped response would leave them locked to the member until the lock ran out): a member
  whose budget is already over its quota when the request arrives acquires nothing (its
  acknowledgements still apply), and a response that takes it over is sent whole with
  throttle_time_ms;
- every request but acks=0 produces: the time the broker spent handling it counts against
  request_percentage (100% = the broker's one event loop, all the time);
- CreateTopics, CreatePartitions, DeleteTopics: their handlers apply controller_mutation_rate
  and put the resulting throttle time in their response.

When a quota is exceeded, the response goes out at once with throttle_time_ms set to the
largest throttle time, and the connection is muted that long (nothing more is read from it).
A throttled consumer's fetch response carries no data (what it would have held is not
counted). For response versions whose clients do not throttle themselves (before KIP-219), the
response itself is held back for the throttle time, which is what throttle_time_ms meant then.
"""
from __future__ import annotations

import asyncio
import logging
import time

from ...protocol.throttle import client_throttles

log = logging.getLogger("gregor.broker.quotas")

PRODUCE, FETCH = 0, 1
SHARE_FETCH = 78
FETCH_APIS = frozenset({FETCH, SHARE_FETCH})
# what the enforcer adds to a ShareFetch body whose client is over its fetch quota
OVER_FETCH_QUOTA = "_over_fetch_quota"
# LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown, WriteTxnMarkers,
# AlterPartition: the cluster's own requests, never throttled (Kafka's "exempt" responses)
EXEMPT_APIS = frozenset({4, 5, 6, 7, 27, 56})
# CreateTopics, DeleteTopics, CreatePartitions: their handlers apply controller_mutation_rate
# and put its throttle time in the response, which the enforcer then applies
MUTATION_APIS = frozenset({19, 20, 37})
# what a partition's entry in a fetch response adds besides its records (ids, offsets,
# error code, array headers): an estimate, the records dominate the size
_PARTITION_OVERHEAD = 40


def fetch_response_size(body: dict) -> int:
    size = 16
    for topic in body.get("responses") or ():
        size += len(topic.get("topic") or "") + 8
        for p in topic.get("partitions") or ():
            size += _PARTITION_OVERHEAD + len(p.get("records") or b"")
    return size


class QuotaEnforcer:
    def __init__(self, service):
        self.service = service

    # -- requests ---------------------------------------------------------------------------

    def handle(self, handler, ctx, body, size: int, call=None):
        """The handler's result for this request, throttled as its quotas say. call: what
        runs the handler instead of handler.handle (a test's fault injection)."""
        conn = ctx.connection
        api = handler.api.key
        if call is None:
            call = _plain
        if conn is None or api in EXEMPT_APIS or (api == FETCH and body.get("replica_id", -1)
                                                  >= 0):
            return call(handler, ctx, body)
        s = self.service
        name, client_id = conn.principal.name, ctx.client_id or ""
        # the budgets this request counts against (None: no quota applies to this client)
        acks0 = api == PRODUCE and body.get("acks") == 0
        produce_budget = s.produce.budget(name, client_id) \
            if api == PRODUCE and s.produce.enabled else None
        fetch_budget = s.fetch.budget(name, client_id) \
            if api in FETCH_APIS and s.fetch.enabled else None
        request_budget = s.request.budget(name, client_id) \
            if s.request.enabled and not acks0 else None
        if produce_budget is None and fetch_budget is None and request_budget is None \
                and api not in MUTATION_APIS:
            return call(handler, ctx, body)       # nothing to measure for this client
        if fetch_budget is not None and (api == SHARE_FETCH or ctx.api_version >= 3):
            cap = s.fetch.max_value_in_window(fetch_budget)
            if body["max_bytes"] > cap or (api == SHARE_FETCH and body["max_bytes"] <= 0):
                body["max_bytes"] = max(1, int(cap))
        if fetch_budget is not None and api == SHARE_FETCH and \
                s.fetch.throttle_now(fetch_budget, int(time.monotonic() * 1000)):
            body[OVER_FETCH_QUOTA] = True
        if request_budget is not None:
            started = time.perf_counter()
            result = call(handler, ctx, body)
            elapsed = time.perf_counter() - started
        else:
            result = call(handler, ctx, body)
        now_ms = int(time.monotonic() * 1000)
        throttle, cause = 0, None
        if produce_budget is not None:
            ms = s.produce.record(produce_budget, size, now_ms)
            if ms > throttle:
                throttle, cause = ms, (s.produce, produce_budget)
        if request_budget is not None:
            # request_percentage counts the time as a % of one thread per second
            ms = s.request.record(request_budget, elapsed * 100.0, now_ms)
            if ms > throttle:
                throttle, cause = ms, (s.request, request_budget)
        if isinstance(result, asyncio.Future):
            return self._chain(ctx, api, result, throttle, cause, fetch_budget)
        if not isinstance(result, dict):        # NO_RESPONSE (acks=0) or pre-encoded bytes
            if throttle:
                cause[0].throttled(cause[1], throttle)
                conn.throttle(throttle)
            return result
        return self._finish(ctx, api, result, throttle, cause, fetch_budget)

    def _chain(self, ctx, api, fut: asyncio.Future, throttle, cause, fetch_budget):
        """A future for the response once the handler's is done and the throttle applied."""
        out = asyncio.get_running_loop().create_future()

        def settle(done: asyncio.Future) -> None:
            if out.done():
                return
            if done.cancelled():
                out.cancel()
                return
            exc = done.exception()
            if exc is not None:
                out.set_exception(exc)
                return
            try:
                res = self._finish(ctx, api, done.result(), throttle, cause, fetch_budget)
            except Exception as e:
                out.set_exception(e)
                return
            if isinstance(res, asyncio.Future):
                # the response held back (an old version): already counted, so it is
                # passed on as it is, not finished (and counted) again
                res.add_done_callback(lambda held: _pass_on(held, out))
            else:
                out.set_result(res)
        fut.add_done_callback(settle)
        return out

    def _finish(self, ctx, api, body, throttle: int, cause, fetch_budget):
        if not isinstance(body, dict):
            return body
        s = self.service
        if api == SHARE_FETCH and fetch_budget is not None:
            now_ms = int(time.monotonic() * 1000)
            ms = s.fetch.record(fetch_budget, fetch_response_size(body), now_ms)
            if ms > throttle:
                throttle, cause = ms, (s.fetch, fetch_budget)
        if api == FETCH:
            size = 0
            if fetch_budget is not None:
                size = fetch_response_size(body)
                now_ms = int(time.monotonic() * 1000)
                ms = s.fetch.record(fetch_budget, size, now_ms)
                if ms > throttle:
                    throttle, cause = ms, (s.fetch, fetch_budget)
                if throttle > 0:
                    s.fetch.unrecord(fetch_budget, size, now_ms)
            if throttle > 0:
                # KIP-219: a throttled consumer gets an empty response at once
                body = {"throttle_time_ms": throttle, "error_code": body.get("error_code", 0),
                        "session_id": body.get("session_id", 0), "responses": []}
        ms = max(throttle, body.get("throttle_time_ms") or 0)
        if ms <= 0:
            return body
        body["throttle_time_ms"] = ms
        if cause is not None:
            cause[0].throttled(cause[1], ms)
        conn = ctx.connection
        if conn.closed:
            return body
        conn.throttle(ms)
        if client_throttles(api, ctx.api_version):
            return body
        return _held_back(body, ms)

    # -- connections --------------------------------------------------------------------------

    def admit(self, conn, transport) -> bool:
        """False when the client's IP is over its connection_creation_rate: the connection
        is then held unread and closed after the throttle time (Kafka's acceptor does so)."""
        quotas = self.service.connections
        if not quotas.enabled:
            return True
        ms = quotas.record(conn.client_host, int(time.monotonic() * 1000))
        if not ms:
            return True
        log.info("connection from %s is over its connection_creation_rate quota; closing it "
                 "in %d ms", conn.peer, ms)
        transport.pause_reading()
        asyncio.get_running_loop().call_later(ms / 1000.0, transport.close)
        return False


def _pass_on(done: asyncio.Future, out: asyncio.Future) -> None:
    if out.done():
        return
    if done.cancelled():
        out.cancel()
    elif done.exception() is not None:
        out.set_exception(done.exception())
    else:
        out.set_result(done.result())


def _plain(handler, ctx, body):
    return handler.handle(ctx, body)


def _held_back(body: dict, ms: int) -> asyncio.Future:
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    loop.call_later(ms / 1000.0, lambda: fut.done() or fut.set_result(body))
    return fut
