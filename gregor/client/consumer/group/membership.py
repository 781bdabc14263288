"""The consumer's group membership as Kafka's Java consumer runs it (AbstractCoordinator /
ConsumerCoordinator, classic eager protocol), sans I/O.

`Membership` takes the time (ms) and the responses to the requests it asked for, and says what
to send next; it never touches a socket, a thread or a clock. The edge (`group_client.py`) sends
its `Request`s and feeds the answers back. Events for the application (revoke, lost, assign)
queue in `events`; a revoke waits for `revoke_done()` before the member rejoins, so the
application can commit in its revoke callback, as with Java's and librdkafka's consumers.

Flow: FindCoordinator -> JoinGroup (MEMBER_ID_REQUIRED: again with the given id) -> the leader
reads the metadata of every member's topics, runs the assignor and sends SyncGroup with all
assignments, followers send it empty -> Stable, heartbeats every heartbeat.interval.ms. Errors:
REBALANCE_IN_PROGRESS -> revoke and rejoin; ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID -> reset,
partitions lost, rejoin; NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE / a lost connection ->
find the coordinator again. No poll for max.poll.interval.ms -> leave the group (as Java's
heartbeat thread does); the member rejoins on the next poll.
"""
from __future__ import annotations

import re

from ....protocol.consumer_protocol import (PROTOCOL_TYPE, Assignment, Subscription,
                                            decode_assignment, decode_subscription,
                                            encode_assignment, encode_subscription)
from ....protocol.errors import ErrorCode as E, error_for_code
from ....protocol.primitives import DecodeError
from .assignors import ASSIGNORS, COOPERATIVE, MemberSubscription
from .requests import (_FATAL_JOIN, _FIND_AGAIN, _RETRY, ANY, ASSIGNING,  # noqa: F401
                       COORDINATOR, JOINING, REVOKING, STABLE, SYNCING, UNJOINED,
                       CommitFailedError, Event, GroupSettings, Op, Request)
from .sticky import cooperative_sticky_assign
from . import offset_ops


class Membership:
    def __init__(self, settings: GroupSettings, now_ms: float = 0):
        self.s = settings
        self.coordinator: int | None = None
        self.coordinator_addr: tuple[str, int] | None = None
        self.member_id = ""
        self.generation = -1
        self.protocol: str | None = None
        self.leader = ""
        self.state = UNJOINED
        self.topics: list[str] = []             # the subscription as sent (pattern resolved)
        self.pattern: re.Pattern | None = None
        self.subscribed = False
        self.assigned: list[tuple[str, int]] = []   # what the application holds
        self.events: list[Event] = []
        self.ops: list[Op] = []
        self.fatal: Exception | None = None
        self.poll_expired = False
        self.last_poll_ms = now_ms
        self._epoch = 0                         # bumped on every reset: stale answers drop
        self._inflight: set[str] = set()
        self._find_after = 0.0
        self._join_after = 0.0
        self._next_hb = 0.0
        self._last_hb_ok = now_ms
        self._next_metadata = 0.0
        self._join_members: list[dict] = []     # the leader's view of the join
        self._partitions: dict[str, int] = {}   # partition counts behind the last assignment
        self._pattern_resolved = False
        self._revoking: set = set()
        # KIP-429: members keep their partitions through a rebalance, give back only those that
        # move, then rejoin (the second rebalance hands them over).
        self.cooperative = bool(set(settings.strategies) & COOPERATIVE)
        self._outbox: list[Request] = []

    # -- the application's side ---------------------------------------------------------------
    def subscribe(self, topics: list[str] | None = None, pattern: str | None = None,
                  now_ms: float = 0) -> None:
        self.pattern = re.compile(pattern) if pattern else None
        new = sorted(set(topics or ()))
        changed = not self.subscribed or new != self.topics or pattern is not None
        self.topics = new
        self.subscribed = True
        self.last_poll_ms = now_ms
        self.fatal = None
        self._join_after = 0
        if pattern is not None:
            self._next_metadata = 0             # resolve the pattern before joining
            self._pattern_resolved = False
        if changed:
            self._request_rejoin()

    def unsubscribe(self) -> None:
        """Leave (dynamic members) and forget the assignment; the caller revoked it."""
        self._leave("the consumer unsubscribed")
        self.subscribed = False
        self.topics, self.pattern, self.assigned = [], None, []
        self.state = UNJOINED

    def close(self) -> None:
        self._leave("the consumer is closing")
        self.subscribed = False

    def poll_tick(self, now_ms: float) -> None:
        """The application polled: max.poll.interval.ms starts again."""
        self.last_poll_ms = now_ms
        if self.poll_expired:
            self.poll_expired = False
            self._request_rejoin()

    def revoke_done(self) -> None:
        """The application handled the revoke (or lost) event: rejoin."""
        if self.state == REVOKING:
            self.assigned = [tp for tp in self.assigned if tp not in self._revoking]
            self._revoking = set()
            self.state = UNJOINED

    def add_op(self, op: Op) -> None:
        self.ops.append(op)

    # -- what to send ---------------------------------------------------------------------------
    def poll(self, now: float) -> list[Request]:
        out: list[Request] = self._outbox
        self._outbox = []
        self._expire_ops(now)
        if self.subscribed and self.state != UNJOINED and not self.poll_expired and \
                now - self.last_poll_ms > self.s.rebalance_timeout_ms:
            self._poll_timeout()
            out += self._outbox
            self._outbox = []
        need_coordinator = self.subscribed or self.ops
        if need_coordinator and self.coordinator is None:
            if "find" not in self._inflight and now >= self._find_after:
                self._inflight.add("find")
                out.append(Request("FindCoordinator", {"key": self.s.group_id, "key_type": 0},
                                   ANY, self.s.request_timeout_ms, "find"))
        out += self._metadata_request(now)
        if self.coordinator is not None:
            out += self._ops_requests(now)
            if self.subscribed and not self.poll_expired:
                out += self._membership_requests(now)
        return out

    def next_wakeup(self, now: float) -> float:
        """Milliseconds until poll() may have something new to send (without answers)."""
        times = [now + 1000]
        if self.state in (STABLE, REVOKING):
            times.append(self._next_hb)
        if self.coordinator is None and (self.subscribed or self.ops) and \
                "find" not in self._inflight:
            times.append(self._find_after)
        if self.state == UNJOINED and self.subscribed and not self.poll_expired:
            times.append(max(self._join_after, now + self.s.retry_backoff_ms))
        if self.pattern is not None or self.state == STABLE:
            times.append(self._next_metadata)
        times += [op.not_before_ms for op in self.ops]
        return max(0.0, min(times) - now)

    def _membership_requests(self, now: float) -> list[Request]:
        if self.state == UNJOINED:
            if self.assigned and (not self.cooperative or self.generation < 0):
                # Eager protocol: give everything back before rejoining. A reset generation
                # means another member may already own them: lost, not revoked.
                self.state = REVOKING
                self._revoking = set(self.assigned)
                self.events.append(Event("lost" if self.generation < 0 else "revoke",
                                         list(self.assigned)))
                return []
            if now < self._join_after or "join" in self._inflight or \
                    (self.pattern is not None and not self._pattern_resolved):
                return []
            self.state = JOINING
            self._inflight.add("join")
            return [self._join_request()]
        if self.state == STABLE or (self.state == REVOKING and self.generation >= 0):
            # (while the application revokes, heartbeats keep the session alive, as Java's)
            if now - self._last_hb_ok > self.s.session_timeout_ms:
                # No heartbeat got through for a whole session: Java marks the coordinator
                # dead and finds it again (the group may have dropped us; the heartbeat says).
                self._coordinator_dead()
                return []
            if now >= self._next_hb and "heartbeat" not in self._inflight:
                self._inflight.add("heartbeat")
                self._next_hb = now + self.s.heartbeat_interval_ms
                return [Request("Heartbeat", {
                    "group_id": self.s.group_id, "generation_id": self.generation,
                    "member_id": self.member_id, "group_instance_id": self.s.instance_id},
                    COORDINATOR, self.s.request_timeout_ms, "heartbeat", self._epoch)]
        return []

    def _join_request(self) -> Request:
        # Owned partitions and generation only where the assignor needs them: a static member
        # restarting with other metadata than it left with would cause a rebalance.
        sub = encode_subscription(Subscription(list(self.topics)) if not self.cooperative else
                                  Subscription(list(self.topics),
                                               owned_partitions=list(self.assigned),
                                               generation_id=self.generation))
        # The coordinator may hold a JoinGroup for the whole rebalance timeout (Java waits
        # rebalance timeout + 5 s).
        timeout = max(self.s.request_timeout_ms, self.s.rebalance_timeout_ms + 5000)
        return Request("JoinGroup", {
            "group_id": self.s.group_id, "session_timeout_ms": self.s.session_timeout_ms,
            "rebalance_timeout_ms": self.s.rebalance_timeout_ms, "member_id": self.member_id,
            "group_instance_id": self.s.instance_id, "protocol_type": PROTOCOL_TYPE,
            "protocols": [{"name": n, "metadata": sub} for n in self.s.strategies],
            "reason": None}, COORDINATOR, timeout, "join", self._epoch)

    def _metadata_request(self, now: float) -> list[Request]:
        if "metadata" in self._inflight:
            return []
        if self.state == ASSIGNING:
            topics = sorted({t for m in self._join_members for t in m["topics"]})
        elif self.subscribed and (self.pattern is not None or self.state == STABLE) and \
                now >= self._next_metadata:
            topics = None if self.pattern is not None else self._group_topics()
        else:
            return []
        self._inflight.add("metadata")
        self._next_metadata = now + self.s.metadata_max_age_ms
        body = {"topics": None if topics is None else [{"name": t} for t in topics],
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False}
        return [Request("Metadata", body, ANY, self.s.request_timeout_ms, "metadata",
                        (self._epoch, self.state))]

    def _group_topics(self) -> list[str]:
        if self.leader == self.member_id and self._partitions:
            return sorted(self._partitions)
        return list(self.topics)

    def _ops_requests(self, now: float) -> list[Request]:
        out, keep = [], []
        for op in self.ops:
            if now < op.not_before_ms:
                keep.append(op)
                continue
            req = self._op_request(op)
            if req is not None:
                out.append(req)
        self.ops = keep
        return out

    def _expire_ops(self, now: float) -> None:
        late = [op for op in self.ops if now >= op.deadline_ms]
        if late:
            self.ops = [op for op in self.ops if now < op.deadline_ms]
        for op in late:
            op.done(None, error_for_code(E.REQUEST_TIMED_OUT, f"{op.kind} for group "
                                         f"{self.s.group_id!r} got no answer in time"))

    def _op_request(self, op: Op) -> Request | None:
        return offset_ops.op_request(self, op)

    # -- answers ----------------------------------------------------------------------------------
    def on_response(self, req: Request, body: dict | None, error: Exception | None,
                    now: float) -> None:
        self._inflight.discard(req.kind)
        if req.kind == "leave":
            return
        if error is not None and req.dest == COORDINATOR:
            self._coordinator_dead()
            if req.kind == "op":
                self.ops.append(req.ctx)        # sent again to the new coordinator
            elif req.kind in ("join", "sync") and req.ctx == self._epoch:
                self._rejoin_now()
            return
        if error is not None:                   # metadata / find: try again shortly
            self._find_after = now + self.s.retry_backoff_ms
            if req.kind == "metadata":
                self._next_metadata = now + self.s.retry_backoff_ms
            return
        getattr(self, "_on_" + req.kind)(req, body, now)

    def _on_find(self, req, body, now):
        code = body.get("error_code", 0)
        if code:
            self._find_after = now + self.s.retry_backoff_ms
            if code not in _FIND_AGAIN and code not in _RETRY:
                self._fail_ops(error_for_code(code, f"finding the coordinator of group "
                                              f"{self.s.group_id!r}"))
            return
        self.coordinator = body["node_id"]
        self.coordinator_addr = (body["host"], body["port"])
        self._last_hb_ok = now

    def _on_join(self, req, body, now):
        if req.ctx != self._epoch:
            return
        code = body["error_code"]
        if code == E.MEMBER_ID_REQUIRED:
            self.member_id = body["member_id"]  # KIP-394: join again with the given id
            self._rejoin_now()
            return
        if code:
            self._join_error(code, now)
            return
        self.generation = body["generation_id"]
        self.member_id = body["member_id"]
        self.leader = body["leader"]
        self.protocol = body["protocol_name"]
        if self.member_id == self.leader:
            try:
                self._join_members = [self._member(m) for m in body["members"]]
            except (DecodeError, UnicodeDecodeError, ValueError) as e:
                self._fail(error_for_code(E.INCONSISTENT_GROUP_PROTOCOL,
                                          f"a member's subscription cannot be read: {e}"))
                return
            self.state = ASSIGNING              # metadata of every member's topics first
            return
        self._send_sync([], now)

    @staticmethod
    def _member(m: dict) -> dict:
        sub = decode_subscription(bytes(m["metadata"]))
        return {"member_id": m["member_id"], "instance_id": m.get("group_instance_id"),
                "topics": sub.topics, "owned": sub.owned_partitions,
                "generation": sub.generation_id}

    def _join_error(self, code: int, now: float) -> None:
        if code in _FIND_AGAIN:
            self._coordinator_dead()
        elif code == E.UNKNOWN_MEMBER_ID:
            self.member_id = ""
        elif code == E.ILLEGAL_GENERATION:
            self.generation = -1
        elif code in _FATAL_JOIN:
            self._fail(error_for_code(code, f"joining group {self.s.group_id!r}: "
                                      f"{error_for_code(code).message}"))
            return
        self._rejoin_now(backoff=now + self.s.retry_backoff_ms)

    def _on_metadata(self, req, body, now):
        epoch, state = req.ctx
        counts = {t["name"]: len(t["partitions"]) for t in body["topics"]
                  if not t["error_code"] and not t.get("is_internal")}
        if self.pattern is not None:
            matched = sorted(t for t in counts if self.pattern.match(t))
            if matched != self.topics:
                self.topics = matched
                if self.state != UNJOINED:
                    self._request_rejoin()
            self._pattern_resolved = True
        if epoch != self._epoch:
            return
        if state == ASSIGNING and self.state == ASSIGNING:
            self._assign(counts, now)
        elif state == STABLE and self.state == STABLE and self.leader == self.member_id:
            # The leader rebalances when partitions were added to the group's topics.
            if any(counts.get(t, n) != n for t, n in self._partitions.items()):
                self._request_rejoin()

    def _assign(self, counts: dict[str, int], now: float) -> None:
        members = [MemberSubscription(m["member_id"], m["topics"], m["instance_id"],
                                      list(m["owned"])) for m in self._join_members]
        wanted = {t for m in members for t in m.topics}
        self._partitions = {t: n for t, n in counts.items() if t in wanted}
        if self.protocol in COOPERATIVE:
            plan = cooperative_sticky_assign(members, self._partitions, {
                m["member_id"]: m["generation"] for m in self._join_members})
        else:
            plan = ASSIGNORS[self.protocol](members, self._partitions)
        self._send_sync([{"member_id": m, "assignment": encode_assignment(Assignment(tps))}
                         for m, tps in plan.items()], now)

    def _send_sync(self, assignments: list, now: float) -> None:
        self.state = SYNCING
        self._inflight.add("sync")
        self._outbox.append(Request("SyncGroup", {
            "group_id": self.s.group_id, "generation_id": self.generation,
            "member_id": self.member_id, "group_instance_id": self.s.instance_id,
            "protocol_type": PROTOCOL_TYPE, "protocol_name": self.protocol,
            "assignments": assignments}, COORDINATOR,
            max(self.s.request_timeout_ms, self.s.rebalance_timeout_ms + 5000), "sync",
            self._epoch))

    def _on_sync(self, req, body, now):
        if req.ctx != self._epoch:
            return
        code = body["error_code"]
        if code == E.REBALANCE_IN_PROGRESS:
            self._rejoin_now()
            return
        if code:
            self._join_error(code, now)
            return
        try:
            tps = sorted(decode_assignment(bytes(body["assignment"] or b"")).partitions)
        except (DecodeError, UnicodeDecodeError) as e:
            self._fail(error_for_code(E.INCONSISTENT_GROUP_PROTOCOL,
                                      f"the leader's assignment cannot be read: {e}"))
            return
        self.state = STABLE
        self._last_hb_ok = now
        self._next_hb = now + self.s.heartbeat_interval_ms
        self._next_metadata = now + self.s.metadata_max_age_ms
        owned = set(self.assigned)
        added = sorted(set(tps) - owned)
        revoked = owned - set(tps)
        self.assigned = sorted(owned | set(added))
        if revoked:
            # cooperative: give these back, then rejoin so their new owner gets them
            self.state = REVOKING
            self._revoking = revoked
            self.events.append(Event("revoke", sorted(revoked)))
        if added or not owned:
            self.events.append(Event("assign", added))

    def _on_heartbeat(self, req, body, now):
        code = body["error_code"]
        if self.state == REVOKING and req.ctx == self._epoch:
            if code in (0, E.REBALANCE_IN_PROGRESS):
                self._last_hb_ok = now
            elif code in (E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID):
                self.generation = -1            # the revoke callback's commits will fail
                if code == E.UNKNOWN_MEMBER_ID:
                    self.member_id = ""
            return
        if req.ctx != self._epoch or self.state != STABLE:
            return
        if not code:
            self._last_hb_ok = now
            return
        if code == E.REBALANCE_IN_PROGRESS:
            self._request_rejoin()
        elif code in (E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID):
            self._reset(member=code == E.UNKNOWN_MEMBER_ID)
        elif code in _FIND_AGAIN:
            self._coordinator_dead()
        elif code == E.FENCED_INSTANCE_ID:
            self._fail(error_for_code(code, f"group.instance.id {self.s.instance_id!r}: "
                                      "another consumer with the same id took this place"))
        else:
            self._next_hb = now + self.s.retry_backoff_ms

    def _on_op(self, req, body, now):
        offset_ops.on_op_response(self, req.ctx, body, now)

    # -- state changes ----------------------------------------------------------------------------
    def _request_rejoin(self) -> None:
        """Rejoin keeping the generation (revoke first if anything is assigned)."""
        if self.state in (STABLE, JOINING, ASSIGNING, SYNCING):
            self._epoch += 1
            self._inflight -= {"join", "sync", "heartbeat"}
            self.state = UNJOINED

    def _rejoin_now(self, backoff: float = 0) -> None:
        self._epoch += 1
        self._inflight -= {"join", "sync", "heartbeat"}
        if self.state != REVOKING:
            self.state = UNJOINED
        self._join_after = backoff

    def _reset(self, member: bool) -> None:
        """Out of the generation (Java's resetStateAndGeneration): partitions are lost."""
        self.generation = -1
        if member:
            self.member_id = ""
        self._rejoin_now()

    def _coordinator_dead(self) -> None:
        if self.coordinator is None:
            return
        self.coordinator = None
        if self.state in (JOINING, ASSIGNING, SYNCING):
            self._rejoin_now()
        self._inflight -= {"heartbeat"}

    def _poll_timeout(self) -> None:
        self._leave("max.poll.interval.ms passed without a poll(): the application is too "
                    "slow or stuck; raise max.poll.interval.ms or poll more often")
        self.poll_expired = True

    def _leave(self, reason: str) -> None:
        if self.coordinator is not None and self.s.instance_id is None and self.member_id:
            self._outbox.append(Request("LeaveGroup", {
                "group_id": self.s.group_id, "member_id": self.member_id,
                "members": [{"member_id": self.member_id, "group_instance_id": None,
                             "reason": reason[:200]}]},
                COORDINATOR, self.s.request_timeout_ms, "leave"))
        # Static members keep their place (KIP-345); a restart takes it back.
        if self.s.instance_id is None:
            self.member_id = ""
        self.generation = -1
        self._rejoin_now()

    def _fail(self, err: Exception) -> None:
        self.fatal = err
        self.events.append(Event("error", error=err))
        self.state = UNJOINED
        self._join_after = float("inf")         # until the application subscribes again

    def _fail_ops(self, err: Exception) -> None:
        ops, self.ops = self.ops, []
        for op in ops:
            op.done(None, err)
