"""What a broker does when its ZooKeeper session changes: stepping out of service and back.

The session's state machine (session.py) runs on the event loop and says what each of kazoo's
reports means; this part of the broker acts on it:
- suspended (connection lost): stop acting as controller at once (a successor may be elected)
  and arm a deadline of one session timeout;
- cut off for that whole deadline, or the session expired: step out. Stop leading (waiting
  acks=all writes answer NOT_LEADER_OR_FOLLOWER, our Metadata names no leader for those
  partitions), unload the group and transaction coordinators' partitions (the same hooks
  LeaderAndIsr runs; their writes are refused from then on) and refuse every client,
  followers fetching from us included, while the controller's requests still get through
  (server.refuse_clients). Another broker may lead our partitions by now, and a client must
  not take our stale view of the cluster (librdkafka keeps asking the broker it is
  connected to for Metadata);
- connected under a new session: register /brokers/ids/<id> again (a new broker epoch, the
  znode's czxid) and read the cluster; the controller notices the new epoch and tells us the
  whole cluster (full LeaderAndIsr, then UpdateMetadata) under it;
- back under the same session (ZooKeeper itself was away): read the cluster again.
We serve clients again once registered under the current session and told the cluster by the
controller under that registration; if the session survived, the controller had nothing new
to tell and our partitions are restated from their states in ZooKeeper first.

Every step out bumps a counter; a return to service that started before a later step out
does not reopen the gate (the gate is closed and opened here only).
"""
from __future__ import annotations

import asyncio
import logging

from . import znodes as z
from .errors import ClusterError
from .session import CUT_OFF, EXPIRE, NEW_SESSION, RECONNECT, SUSPEND

log = logging.getLogger("gregor.broker.cluster")

REFUSAL = ("this broker is out of the cluster until its ZooKeeper session is back; "
           "ask another broker")


class SessionHandlingMixin:
    """Part of ClusterMember (member.py)."""

    # -- kazoo's reports, in order, on the loop --------------------------------------------

    def _on_session(self, state: str, session_id: int | None) -> None:
        if self._closed:
            return
        transitions = self.session.on_event(state, session_id)
        if not transitions:
            log.info("ZooKeeper session %s (session 0x%x) ignored: the session is %s now",
                     state, session_id or 0, self.session.state)
            return
        log.info("ZooKeeper session %s (session 0x%x)", state, session_id or 0)
        for t in transitions:
            self._act_on_session(t)

    def _on_session_deadline(self, suspension: int) -> None:
        self._deadline = None
        if not self._closed:
            for t in self.session.on_deadline(suspension):
                self._act_on_session(t)

    def _act_on_session(self, t) -> None:
        if self._deadline is not None:
            self._deadline.cancel()          # whatever happens next supersedes it
            self._deadline = None
        if t.action == SUSPEND:
            self.controller.on_session("SUSPENDED")
            self._deadline = asyncio.get_running_loop().call_later(
                self.store.session_timeout, self._on_session_deadline, t.suspension)
        elif t.action == CUT_OFF:
            self._step_out("cut off from ZooKeeper for longer than "
                           "zookeeper.session.timeout.ms")
        elif t.action == EXPIRE:
            self.controller.on_session("LOST")
            self._registered = False
            self._step_out("ZooKeeper session expired")
        elif t.action in (RECONNECT, NEW_SESSION):
            self.controller.on_session("CONNECTED")
            self.request_refresh()           # registers again first under a new session

    # -- out of service and back -----------------------------------------------------------

    def _step_out(self, why: str) -> None:
        """Stop leading anything until the controller says otherwise, and refuse clients."""
        self._step_outs += 1
        self._stepped_out_session = self.session.session_id
        rm = self.broker.replica_manager
        fenced = 0
        for part in list(rm.partitions.values()):
            view = self.snapshot.topics.get(part.topic)
            # the coordinators let go whatever the partition's state here: their timers
            # must not act on state another broker may own by now (they load it again from
            # the log if we lead again)
            self._left_leadership(part)
            if not part.is_leader or view is None:
                continue
            part.make_follower(-1, part.leader_epoch, part.isr, part.replicas,
                               part.state_zk_version)
            rm.notify(part)                 # waiting produces and fetches answer now
            state = view.states.get(part.index)
            if state is not None and state.leader == self.broker_id:
                view.states[part.index] = z.PartitionState(
                    -1, state.leader_epoch, state.isr, state.controller_epoch, -1)
            fenced += 1
        log.warning("%s: out of service (no longer leading %d partition(s)) until registered "
                    "and told the cluster again", why, fenced)
        server = self.broker.server
        if server is not None and not self._closed:
            server.refuse_clients(REFUSAL)
            self._refusing = True

    def maybe_accept_clients(self) -> None:
        """After stepping out: serve again once registered under the current session and
        told the cluster by the controller under that registration (before, our cache may
        be stale)."""
        if not self._refusing or self._restating or self._closed:
            return
        if not self.session.connected or not self._registered \
                or self._registered_session != self.session.session_id:
            return
        if self.told_epoch != self.broker_epoch or self.metadata_epoch != self.broker_epoch:
            return
        self._restating = True
        asyncio.get_running_loop().create_task(
            self._serve_again(self._step_outs, self.session.session_id))

    async def _serve_again(self, step_out: int, session_id: int | None) -> None:
        try:
            if session_id == self._stepped_out_session:
                # The session survived the cut (ZooKeeper itself was away): the controller
                # saw nothing to tell us, so our fenced partitions are restated from their
                # states, as a full LeaderAndIsr would (older states are ignored).
                await self._restate_local_partitions()
        except Exception as e:
            log.warning("restating our partitions from ZooKeeper failed: %s; retrying", e)
            self._restating = False
            asyncio.get_running_loop().call_later(1.0, self.maybe_accept_clients)
            return
        self._restating = False
        if step_out != self._step_outs or session_id != self.session.session_id \
                or not self.session.connected:
            self.maybe_accept_clients()      # stepped out again meanwhile: judge afresh
            return
        if not self._refusing:
            return
        self._refusing = False
        if self.broker.server is not None:
            self.broker.server.accept_clients()
        log.info("back in the cluster (broker epoch %d): accepting clients again",
                 self.broker_epoch)

    async def _restate_local_partitions(self) -> None:
        parts = [p for p in self.broker.replica_manager.partitions.values() if not p.deleted
                 and p.zk_state is not None]
        states = [(p, await self.store.read_state(p.topic, p.index)) for p in parts]
        async with self._push_lock:
            for part, state in states:
                if state is None:
                    continue
                info = self.broker.store.get(part.topic)
                view = self.snapshot.topics.get(part.topic)
                replicas = list(view.assignment.partitions.get(part.index, part.replicas)) \
                    if view is not None else list(part.replicas)
                if info is not None:
                    self._lead_or_follow(info, {
                        "partition_index": part.index, "leader": state.leader,
                        "leader_epoch": state.leader_epoch, "isr": state.isr,
                        "controller_epoch": state.controller_epoch,
                        "partition_epoch": state.zk_version, "replicas": replicas}, True)
                cached = view.states.get(part.index) if view is not None else None
                if cached is not None and (cached.leader_epoch, cached.zk_version) <= \
                        (state.leader_epoch, state.zk_version):
                    view.states[part.index] = state

    # -- reading ZooKeeper again -----------------------------------------------------------

    def request_refresh(self) -> None:
        """Something watched changed: re-read (coalescing bursts of events into one read)."""
        self._dirty = True
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = asyncio.get_running_loop().create_task(self._refresh_loop())

    async def _refresh_loop(self) -> None:
        backoff = 0.05
        while self._dirty and not self._closed:
            self._dirty = False
            try:
                if self.session.connected and \
                        self._registered_session != self.session.session_id:
                    await self._register()      # a new session: a new registration
                await self.refresh_now()
                self.maybe_accept_clients()
                backoff = 0.05
            except asyncio.CancelledError:
                raise
            except ClusterError as e:
                log.error("%s", e)
                return
            except Exception as e:
                # Disconnected meanwhile (the next CONNECTED asks again), or a znode we could
                # not read: tried again shortly rather than at the next event, which may
                # already have come while this read was failing.
                log.warning("reading the cluster from ZooKeeper failed: %s", e)
                if not self.session.connected:
                    continue                # the loop ends unless an event came meanwhile
                await asyncio.sleep(backoff)
                backoff = min(1.0, backoff * 2)
                self._dirty = True
