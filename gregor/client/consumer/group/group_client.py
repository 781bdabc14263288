"""The edge of group membership: one background thread with its own connections that sends
what `Membership` asks for and feeds the answers back.

Like Java's heartbeat thread (and librdkafka's main thread), it keeps the member alive while the
application processes records between polls: heartbeats, and the leave after
max.poll.interval.ms, never wait for poll(). Its own NetworkClient keeps a JoinGroup that the
coordinator holds for a whole rebalance off the fetch connections. The application's thread
talks to it through a lock: events to apply, commits and offset lookups as `Op`s.
"""
from __future__ import annotations

import concurrent.futures
import logging
import threading
import time

from ...errors import KafkaConnectionError, KafkaTimeoutError
from ...metadata import BrokerInfo, Metadata
from .membership import Membership
from .requests import COORDINATOR, GroupSettings, Op, Request

log = logging.getLogger("gregor.client.consumer.group")

# Highest versions we send: the ones librdkafka sends (every broker since Kafka 2.3 has them,
# and the non-flexible encodings keep the frames small). Lower ones are used when that is all
# the broker has.
_CAPS = {"FindCoordinator": 3, "JoinGroup": 5, "SyncGroup": 3, "Heartbeat": 3,
         "LeaveGroup": 3, "OffsetCommit": 7, "OffsetFetch": 7, "Metadata": 8}
# A requested op is not answered while the member is found again; the caller's timeout bounds
# it, this bounds one loop's sleep so a stop or wakeup is never missed for long.
_MAX_SLEEP_S = 0.2


def _ms() -> float:
    return time.monotonic() * 1000.0


class GroupClient:
    def __init__(self, cfg: dict, settings: GroupSettings, wake_consumer=None, *,
                 network=None):
        if network is None:
            from ...network import NetworkClient
            network = NetworkClient(cfg, metadata=Metadata(cfg["metadata.max.age.ms"]))
        self._net = network
        self._wake_consumer = wake_consumer or (lambda: None)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self.m = Membership(settings, _ms())
        self.has_events = False
        self._pending: list[tuple[Request, float]] = []     # waiting for a ready connection
        self._inflight: dict[object, Request] = {}
        self._stopping = False
        self._outstanding = 0                   # ops submitted and not answered yet
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"gregor-group-{settings.group_id}")
        self._thread.start()

    # -- the application's thread -------------------------------------------------------------
    def subscribe(self, topics=None, pattern=None) -> None:
        with self._lock:
            self.m.subscribe(topics, pattern, _ms())
        self._net.wakeup()

    def unsubscribe(self) -> None:
        with self._lock:
            self.m.unsubscribe()
            self.has_events = False
            self.m.events.clear()
        self._net.wakeup()

    def tick(self) -> None:
        with self._lock:
            self.m.poll_tick(_ms())
        if self.m.state == "unjoined":
            self._net.wakeup()

    def take_events(self) -> list:
        with self._lock:
            events, self.m.events = self.m.events, []
            self.has_events = False
        return events

    def revoke_done(self) -> None:
        with self._lock:
            self.m.revoke_done()
        self._net.wakeup()

    def submit(self, kind: str, payload, timeout_s: float) -> concurrent.futures.Future:
        fut: concurrent.futures.Future = concurrent.futures.Future()

        def done(result, error):
            self._outstanding -= 1              # (called under the lock)
            if error is not None:
                fut.set_exception(error)
            else:
                fut.set_result(result)
        with self._lock:
            self._outstanding += 1
            self.m.add_op(Op(kind, payload, done, _ms() + timeout_s * 1000.0))
        self._net.wakeup()
        return fut

    def call(self, kind: str, payload, timeout_s: float):
        fut = self.submit(kind, payload, timeout_s)
        try:
            # the op's own deadline answers first; this margin only guards a dead thread
            return fut.result(timeout_s + 5.0)
        except concurrent.futures.TimeoutError:
            raise KafkaTimeoutError(f"{kind} for group {self.m.s.group_id!r} got no answer "
                                    f"in {timeout_s:.1f} s") from None

    @property
    def generation(self) -> tuple[int, str]:
        return self.m.generation, self.m.member_id

    def close(self, timeout_s: float = 5.0) -> None:
        """Finish the commits under way, leave the group (dynamic members), wait briefly for
        that to go out, stop."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._outstanding and time.monotonic() < deadline:
                self._cond.wait(0.05)
        with self._lock:
            self.m.close()
            self._stopping = True
        self._net.wakeup()
        self._thread.join(timeout_s)
        self._net.close()

    # -- the group thread ------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            self._loop()
        except Exception:  # never die silently: the application would hang in a rebalance
            log.exception("group thread of %r failed", self.m.s.group_id)
            with self._lock:
                from ....protocol.errors import error_for_code
                self.m._fail(error_for_code(-1, "the consumer's group thread failed; see "
                                            "the log"))
                self.has_events = True
            self._wake_consumer()

    def _loop(self) -> None:
        stop_at = None
        while True:
            now = _ms()
            with self._lock:
                new = self.m.poll(now)
                wait = self.m.next_wakeup(now) / 1000.0
                stopping = self._stopping
                if self.m.events and not self.has_events:
                    self.has_events = True
                    self._wake_consumer()
            self._pending += [(r, now) for r in new]
            if stopping:
                # Only the LeaveGroup matters now; give it a moment to reach the broker.
                self._pending = [(r, t) for r, t in self._pending if r.kind == "leave"]
                stop_at = stop_at or now + 2000
                if not self._pending and not any(r.kind == "leave"
                                                 for r in self._inflight.values()):
                    return
                if now >= stop_at:
                    return
            self._send(now)
            done = self._net.poll(min(max(wait, 0.001), _MAX_SLEEP_S))
            if not done:
                continue
            with self._lock:
                for res in done:
                    req = self._inflight.pop(res, None)
                    if req is None:
                        continue
                    if req.api == "Metadata" and res.error is None:
                        self._net.metadata.update(res.body, self._net.clock())
                    self.m.on_response(req, res.body, res.error, _ms())
                    if req.api == "FindCoordinator" and self.m.coordinator is not None:
                        self._know_coordinator()
                self._cond.notify_all()

    def _know_coordinator(self) -> None:
        node, (host, port) = self.m.coordinator, self.m.coordinator_addr
        md = self._net.metadata
        known = md.brokers.get(node)
        if known is None or (known.host, known.port) != (host, port):
            md.brokers = {**md.brokers, node: BrokerInfo(node, host, port, None)}

    def _send(self, now: float) -> None:
        keep = []
        for req, since in self._pending:
            if req.dest == COORDINATOR:
                node = self.m.coordinator
                if node is None:
                    self._fail_request(req, KafkaConnectionError("the coordinator moved"))
                    continue
            else:
                node = self._net.least_loaded_node()
            limit = self.m.s.request_timeout_ms
            if node is None or not self._net.ready(node):
                if now - since > limit:
                    where = "the coordinator" if req.dest == COORDINATOR else "any broker"
                    self._fail_request(req, KafkaConnectionError(
                        f"no connection to {where} within request.timeout.ms={limit}"))
                else:
                    keep.append((req, since))
                continue
            negotiated = self._net.api_version_for(node, req.api)
            if negotiated is None:
                self._fail_request(req, KafkaConnectionError(
                    f"broker {node} does not support {req.api}"))
                continue
            version = min(_CAPS.get(req.api, negotiated), negotiated)
            try:
                res = self._net.send(node, req.api, req.body, version,
                                     timeout=req.timeout_ms / 1000.0)
            except Exception as e:  # noqa: BLE001 - the state machine decides what it means
                self._fail_request(req, e)
                continue
            self._inflight[res] = req
        self._pending = keep

    def _fail_request(self, req: Request, err: Exception) -> None:
        with self._lock:
            self.m.on_response(req, None, err, _ms())
            self._cond.notify_all()
