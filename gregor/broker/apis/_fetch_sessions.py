"""KIP-227 incremental fetch sessions (Fetch v7+), as Kafka's FetchManager answers them.

A request's (session_id, session_epoch) picks its context:
  (0, -1)          sessionless: a full fetch, no session (what gregor always did);
  (any, 0)         full: the named session (if any) is closed, a new one is created from the
                   request's partitions when the response is built (session id 0 in the
                   response when the cache has no room, as Kafka does);
  (id, -1)         the named session is closed, the fetch is sessionless;
  (id, epoch > 0)  incremental: the request carries only added or changed partitions and
                   `forgotten_topics_data`; the response only partitions with something new
                   (records, a high watermark / log start offset move, the LSO for
                   read_committed, an error). Unknown id: FETCH_SESSION_ID_NOT_FOUND; an
                   epoch other than the session's: INVALID_FETCH_SESSION_EPOCH (both with an
                   empty response and session id 0; the session itself stays).
Partitions that returned records move to the end of the session, so that under max_bytes
the others are read first next time (Kafka's round robin).

The cache (gregor/broker/sessions.py) holds `max.incremental.fetch.session.cache.slots`
sessions; `min.incremental.fetch.session.eviction.ms` is when an idle or old one may go.
Followers' sessions are privileged. Counters in `FetchSessions.stats`.

Idle partitions cost little: before reading, `select` skips any cached partition whose
high watermark, log start (and LSO) are as last sent and that has nothing to read at its
fetch offset; only the rest goes through the regular read.
"""
from __future__ import annotations

import time

from ...protocol.errors import ErrorCode
from ..sessions import FINAL_EPOCH, INITIAL_EPOCH, SessionCache, next_epoch


class CachedPartition:
    """A session's partition: the fetch parameters the client last sent and what the last
    response told it. Same attributes as fetch.PartitionFetch, so it is read the same way."""

    __slots__ = ("topic", "partition", "offset", "max_bytes", "partition_obj", "snapshot",
                 "leader_epoch", "denied", "hw", "lso", "log_start")

    def __init__(self, topic, partition, offset, max_bytes, leader_epoch):
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.max_bytes = max_bytes
        self.leader_epoch = leader_epoch
        self.partition_obj = None
        self.snapshot = 0
        self.denied = False
        self.hw = -1                 # -1: never sent (or an error was): the next answer has it
        self.lso = -1
        self.log_start = -1


class FetchSessions:
    def __init__(self, broker):
        cfg = broker.config
        self.broker = broker
        self.cache = SessionCache(
            max_slots=int(cfg.get("max.incremental.fetch.session.cache.slots")),
            eviction_ms=int(cfg.get("min.incremental.fetch.session.eviction.ms")),
            clock=self._now_ms)
        self.stats = {"sessionless": 0, "full": 0, "incremental": 0, "errors": 0,
                      "created": 0, "refused": 0, "partitions_sent": 0,
                      "partitions_omitted": 0}

    def _now_ms(self) -> int:
        clock = self.broker.clock
        return int((clock.monotonic() if clock is not None else time.monotonic()) * 1000)

    def context(self, request, follower: bool):
        """None for a sessionless fetch, a FullContext / IncrementalContext, or an error
        response body."""
        sid = request["session_id"]
        epoch = request["session_epoch"]
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if sid != 0:
                self.cache.remove(sid)       # a full request closes the session it names
            if epoch == FINAL_EPOCH:
                self.stats["sessionless"] += 1
                return None
            self.stats["full"] += 1
            return FullContext(self, follower)
        session = self.cache.get(sid) if sid != 0 else None
        if session is None:
            return self._error(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return self._error(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        parts = session.payload
        for t in request["topics"]:
            name = t["topic"]
            for pt in t["partitions"]:
                key = (name, pt["partition"])
                c = parts.get(key)
                if c is None:
                    parts[key] = CachedPartition(name, pt["partition"], pt["fetch_offset"],
                                                 max(0, pt["partition_max_bytes"]),
                                                 pt.get("current_leader_epoch", -1))
                else:
                    c.offset = pt["fetch_offset"]
                    c.max_bytes = max(0, pt["partition_max_bytes"])
                    c.leader_epoch = pt.get("current_leader_epoch", -1)
        for t in request["forgotten_topics_data"]:
            name = t["topic"]
            for p in t["partitions"]:
                parts.pop((name, p), None)
        if not parts:
            self.cache.remove(session.key)   # nothing left: closed, answered sessionless
            self.stats["sessionless"] += 1
            return None
        self.cache.touch(session, size=len(parts))
        session.epoch = next_epoch(session.epoch)
        self.stats["incremental"] += 1
        return IncrementalContext(self, session)

    def _error(self, code: int) -> dict:
        self.stats["errors"] += 1
        return {"throttle_time_ms": 0, "error_code": code, "session_id": 0, "responses": []}


class FullContext:
    """Reads the request's partitions; the response creates the session."""

    fetches = None        # the request's own partitions

    def __init__(self, owner: FetchSessions, follower: bool):
        self.owner = owner
        self.follower = follower

    def select(self, fetches, read_committed: bool):
        return fetches

    def finish(self, body: dict, fetches) -> dict:
        parts: dict = {}
        by_key = {}
        for t in body["responses"]:
            for p in t["partitions"]:
                by_key[(t["topic"], p["partition_index"])] = p
        for f in fetches:
            c = CachedPartition(f.topic, f.partition, f.offset, f.max_bytes, f.leader_epoch)
            out = by_key.get((f.topic, f.partition))
            if out is not None and out["error_code"] == ErrorCode.NONE:
                c.hw = out["high_watermark"]
                c.lso = out["last_stable_offset"]
                c.log_start = out["log_start_offset"]
            parts[(f.topic, f.partition)] = c
        session = self.owner.cache.create(len(parts), parts, privileged=self.follower)
        if session is None:
            self.owner.stats["refused"] += 1
        else:
            self.owner.stats["created"] += 1
            body["session_id"] = session.key
        return body


class IncrementalContext:
    def __init__(self, owner: FetchSessions, session):
        self.owner = owner
        self.session = session
        self.fetches = list(session.payload.values())
        self.rm = owner.broker.replica_manager

    def keys(self):
        """The purgatory keys of the session's partitions."""
        return self.session.payload.keys()

    def select(self, fetches, read_committed: bool):
        """The session's partitions that may have something to say: each one's partition and
        its committed-bytes snapshot are refreshed (for the purgatory) on the way."""
        get = self.rm.partitions.get
        leader_check = self.owner.broker.cluster is not None
        out = []
        for c in fetches:
            p = get((c.topic, c.partition))
            c.partition_obj = p
            if p is None:
                c.snapshot = 0
                out.append(c)
                continue
            c.snapshot = p.committed_bytes
            log_ = p.log
            hw = p.high_watermark
            start = log_.log_start_offset
            if (hw != c.hw or start != c.log_start or c.denied
                    or (leader_check and not p.is_leader)
                    or (c.leader_epoch >= 0 and c.leader_epoch != p.leader_epoch)
                    or c.offset < start
                    or (c.offset > hw and c.offset > log_.log_end_offset)):
                out.append(c)
                continue
            if read_committed:
                lso = p.last_stable_offset
                if lso != c.lso or c.offset < lso:
                    out.append(c)
            elif c.offset < hw:
                out.append(c)
        return out

    def finish(self, body: dict, fetches) -> dict:
        parts = self.session.payload
        sent = 0
        moved = []
        responses = []
        for t in body["responses"]:
            name = t["topic"]
            keep = []
            for p in t["partitions"]:
                c = parts.get((name, p["partition_index"]))
                if c is None:
                    continue
                respond = False
                if p["records"]:
                    respond = True
                    moved.append(c)
                if p["error_code"] != ErrorCode.NONE:
                    c.hw = -1                # re-sent once the error goes away
                    respond = True
                else:
                    if p["high_watermark"] != c.hw:
                        c.hw = p["high_watermark"]
                        respond = True
                    if p["log_start_offset"] != c.log_start:
                        c.log_start = p["log_start_offset"]
                        respond = True
                    if p["aborted_transactions"] is not None and \
                            p["last_stable_offset"] != c.lso:
                        c.lso = p["last_stable_offset"]
                        respond = True
                if respond:
                    keep.append(p)
            if keep:
                responses.append({"topic": name, "partitions": keep})
                sent += len(keep)
        for c in moved:                      # round robin: who got data goes last
            key = (c.topic, c.partition)
            parts[key] = parts.pop(key)
        stats = self.owner.stats
        stats["partitions_sent"] += sent
        stats["partitions_omitted"] += len(parts) - sent
        body["responses"] = responses
        body["session_id"] = self.session.key
        return body


def sessions_of(broker) -> FetchSessions:
    """The broker's fetch-session manager, made on first use."""
    fs = getattr(broker, "fetch_sessions", None)
    if fs is None:
        fs = broker.fetch_sessions = FetchSessions(broker)
    return fs
