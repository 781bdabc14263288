"""One writer among the registry instances, elected through Kafka's group protocol.

A thread per instance: FindCoordinator for group `schema-registry`, JoinGroup (protocol type
`sr`, our identity as metadata), the group's leader computes the assignment
(election_protocol.assign) and sends it with SyncGroup, then Heartbeat every
heartbeat.interval until a rebalance. An instance that dies stops heartbeating and the
coordinator drops it after the session timeout; the others rejoin and elect again. A new
writer reads `_schemas` to its end (a NOOP record) before it accepts a write, so it hands out
the ids the old one would have.
"""
from __future__ import annotations

import logging
import threading
import time

from ..client.network import NetworkClient
from ..protocol.errors import ErrorCode as E
from .election_protocol import (GROUP, PROTOCOL, PROTOCOL_TYPE, Assignment, Identity,
                                assign)

log = logging.getLogger(__name__)

_CAPS = {"FindCoordinator": 3, "JoinGroup": 5, "SyncGroup": 3, "Heartbeat": 3,
         "LeaveGroup": 3}
# Confluent's defaults (leader.election.* / schema.registry.group.*)
SESSION_TIMEOUT_MS = 10_000
HEARTBEAT_INTERVAL_MS = 3_000
REBALANCE_TIMEOUT_MS = 30_000
_COORDINATOR_ERRORS = {E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE,
                       E.COORDINATOR_LOAD_IN_PROGRESS}


class LeaderElection:
    def __init__(self, client_config: dict, url: str, *, eligible: bool = True,
                 on_leader=None, session_timeout_ms: int = SESSION_TIMEOUT_MS,
                 heartbeat_interval_ms: int = HEARTBEAT_INTERVAL_MS, group: str = GROUP):
        self.identity = Identity.from_url(url, eligible)
        self.config = {**client_config, "client.id": "gregor-schema-registry-election"}
        self.on_leader = on_leader or (lambda: None)
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_s = heartbeat_interval_ms / 1000
        self.group = group
        self._net = None
        self._stop = threading.Event()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self.member_id = ""
        self.generation = -1
        self.coordinator: int | None = None
        self.assignment: Assignment | None = None
        self._leader_ready = False
        self._last_leader_url: str | None = None

    # -- what the app asks ------------------------------------------------------------------
    def is_leader(self) -> bool:
        return self._leader_ready

    def leader_url(self) -> str | None:
        a = self.assignment
        return a.leader.url if a is not None and a.leader is not None else None

    def wait_for_leader(self, timeout_s: float) -> str | None:
        with self._changed:
            self._changed.wait_for(lambda: self.leader_url() is not None and
                                   (self.leader_url() != self.identity.url or
                                    self._leader_ready), timeout=timeout_s)
        return self.leader_url()

    # -- lifecycle --------------------------------------------------------------------------
    def start(self, timeout_s: float = 60.0) -> None:
        self._net = NetworkClient(self.config)
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="schema-registry-election")
        self._thread.start()
        self.wait_for_leader(timeout_s)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=15)
        if self.member_id and self.coordinator is not None:
            try:
                self._call(self.coordinator, "LeaveGroup", {
                    "group_id": self.group, "member_id": self.member_id,
                    "members": [{"member_id": self.member_id}]}, timeout=3)
            except Exception:
                pass
        if self._net is not None:
            self._net.close()

    def _set(self, assignment: Assignment | None, ready: bool) -> None:
        with self._changed:
            self.assignment = assignment
            self._leader_ready = ready
            self._changed.notify_all()

    # -- the protocol -----------------------------------------------------------------------
    def _call(self, node, api: str, body: dict, timeout: float | None = None) -> dict:
        version = self._net.api_version(node, api, timeout=timeout)
        if version is None:
            raise RuntimeError(f"the broker does not support {api}")
        return self._net.request(node, api, body, version=min(version, _CAPS[api]),
                                 timeout=timeout)

    def _run(self) -> None:
        backoff = 0.1
        while not self._stop.is_set():
            try:
                self._round()
                backoff = 0.1
            except Exception as e:
                if self._stop.is_set():
                    return
                log.info("schema registry election: %s; retrying", e)
                self._set(self.assignment, False)
                self.coordinator = None
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 2.0)

    def _find_coordinator(self) -> int:
        self._net.refresh_metadata([], timeout=10)
        body = self._call(None, "FindCoordinator", {"key": self.group, "key_type": 0,
                                                   "coordinator_keys": [self.group]}, timeout=10)
        if body.get("coordinators"):
            body = body["coordinators"][0]
        if body["error_code"]:
            raise RuntimeError(f"FindCoordinator: error {body['error_code']}")
        self._net.refresh_metadata([], timeout=10)
        return body["node_id"]

    def _round(self) -> None:
        if self.coordinator is None:
            self.coordinator = self._find_coordinator()
        join = self._call(self.coordinator, "JoinGroup", {
            "group_id": self.group, "session_timeout_ms": self.session_timeout_ms,
            "rebalance_timeout_ms": REBALANCE_TIMEOUT_MS, "member_id": self.member_id,
            "protocol_type": PROTOCOL_TYPE,
            "protocols": [{"name": PROTOCOL, "metadata": self.identity.encode()}]},
            timeout=REBALANCE_TIMEOUT_MS / 1000 + 10)
        code = join["error_code"]
        if code == E.MEMBER_ID_REQUIRED:
            self.member_id = join["member_id"]
            return
        if code in (E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION):
            self.member_id = ""
            return
        if code in _COORDINATOR_ERRORS:
            self.coordinator = None
            return
        if code:
            raise RuntimeError(f"JoinGroup: error {code}")
        self.member_id, self.generation = join["member_id"], join["generation_id"]
        assignments = []
        if join["leader"] == self.member_id:
            members = {}
            for m in join["members"]:
                try:
                    members[m["member_id"]] = Identity.decode(m["metadata"])
                except (ValueError, KeyError, TypeError):
                    log.warning("member %s sent metadata that is not an identity",
                                m["member_id"])
            result = assign(members, self._last_leader_url)
            raw = result.encode()
            assignments = [{"member_id": mid, "assignment": raw} for mid in members]
        sync = self._call(self.coordinator, "SyncGroup", {
            "group_id": self.group, "generation_id": self.generation,
            "member_id": self.member_id, "protocol_type": PROTOCOL_TYPE,
            "protocol_name": PROTOCOL, "assignments": assignments}, timeout=30)
        if sync["error_code"]:
            if sync["error_code"] in (E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION):
                self.member_id = ""
            self._set(None, False)
            return
        assignment = Assignment.decode(sync["assignment"])
        if assignment.error:
            log.error("schema registry election: two instances advertise the same URL; "
                      "no instance will accept writes until that is fixed")
        mine = assignment.leader_member == self.member_id and not assignment.error
        if assignment.leader is not None:
            self._last_leader_url = assignment.leader.url
        self._set(assignment, False)
        if mine:
            self.on_leader()                # read `_schemas` to its end first
        self._set(assignment, mine)
        log.info("schema registry election: generation %d, leader %s%s", self.generation,
                 self.leader_url(), " (this instance)" if mine else "")
        self._heartbeat_until_rebalance()

    def _heartbeat_until_rebalance(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            hb = self._call(self.coordinator, "Heartbeat", {
                "group_id": self.group, "generation_id": self.generation,
                "member_id": self.member_id}, timeout=self.session_timeout_ms / 1000)
            code = hb["error_code"]
            if code == 0:
                continue
            self._set(self.assignment, False)
            if code in (E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION):
                self.member_id = ""
            elif code in _COORDINATOR_ERRORS:
                self.coordinator = None
            return                          # REBALANCE_IN_PROGRESS and the rest: rejoin
