"""`ShareConsumer`: a member of a share group (KIP-932), as confluent-kafka's and Java's.

    with ShareConsumer("orders-workers", bootstrap_servers="localhost:9092") as c:
        c.subscribe(["orders"])
        for record in c.poll(1.0):
            handle(record)                 # implicit mode: accepted on the next poll

Several members of one share group may read the same partition: each record is handed to one
of them under an acquisition lock and must be acknowledged. In implicit mode (the default)
everything a poll returned is ACCEPTed by the next poll, commit or close. In explicit mode
(`acknowledgement_mode="explicit"`) each record gets acknowledge(record, ACCEPT | RELEASE |
REJECT) before the next poll; RELEASE hands it to the group again (its delivery count goes
up), REJECT archives it.

Blocking and single-threaded: the group heartbeat (ShareGroupHeartbeat to the coordinator)
is sent from poll() when due, ShareFetch goes to each partition's leader in a share session
of its own, and acknowledgements ride on the next ShareFetch (ShareAcknowledge on commit and
close). Keep polls within share.session.timeout.ms (45 s by default) of each other.
"""
from __future__ import annotations

import base64
import time
import uuid
from dataclasses import dataclass, field

from ...protocol.errors import ErrorCode, error_for_code
from ...protocol.records.batch import decode_batches
from ..network import NetworkClient

E = ErrorCode
ACCEPT, RELEASE, REJECT = 1, 2, 3
_REJOIN = {E.UNKNOWN_MEMBER_ID, E.FENCED_MEMBER_EPOCH}
_RECOORDINATE = {E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE,
                 E.COORDINATOR_LOAD_IN_PROGRESS}
_SESSION_LOST = {E.SHARE_SESSION_NOT_FOUND, E.INVALID_SHARE_SESSION_EPOCH}


@dataclass
class ShareRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list = field(default_factory=list)
    delivery_count: int = 1


class ShareConsumer:
    def __init__(self, group_id: str, bootstrap_servers: str = "localhost:9092", *,
                 acknowledgement_mode: str = "implicit", max_poll_records: int = 500,
                 client_id: str = "gregor-share-consumer", **config):
        if acknowledgement_mode not in ("implicit", "explicit"):
            raise ValueError("acknowledgement_mode is 'implicit' or 'explicit'")
        self.group_id = group_id
        self.mode = acknowledgement_mode
        self.max_poll_records = max_poll_records
        self._net = NetworkClient({"bootstrap.servers": bootstrap_servers,
                                   "client.id": client_id, **config})
        self.member_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode()[:22]
        self._epoch = 0
        self._topics: list[str] = []
        self._coordinator: int | None = None
        self._next_heartbeat = 0.0
        self._interval = 5.0
        self._assignment: dict[bytes, list[int]] = {}
        self._names: dict[bytes, str] = {}
        self._sessions: dict[int, int] = {}                 # leader -> next session epoch
        self._in_session: dict[int, set] = {}               # leader -> {(topic id, p)}
        self._pending: dict[tuple, list] = {}               # (topic id, p) -> [(off, type)]
        self._delivered: list[ShareRecord] = []             # last poll's, not yet acked
        self._acked: set = set()
        self.closed = False

    # -- membership --------------------------------------------------------------------------

    def subscribe(self, topics) -> None:
        self._topics = sorted(set(topics))
        self._next_heartbeat = 0.0

    def subscription(self) -> list[str]:
        return list(self._topics)

    def _find_coordinator(self) -> int:
        resp = self._net.request(None, "FindCoordinator", {"key": self.group_id, "key_type": 0},
                                 min(3, self._net.api_version(None, "FindCoordinator") or 0))
        if resp.get("error_code"):
            raise error_for_code(resp["error_code"], resp.get("error_message"))
        return resp["node_id"]

    def _heartbeat(self, leaving: bool = False) -> None:
        if self._coordinator is None:
            self._net.refresh_metadata(self._topics or [])
            self._coordinator = self._find_coordinator()
        body = {"group_id": self.group_id, "member_id": self.member_id,
                "member_epoch": -1 if leaving else self._epoch, "rack_id": None,
                "subscribed_topic_names": self._topics}
        r = self._net.request(self._coordinator, "ShareGroupHeartbeat", body, 1)
        code = r["error_code"]
        if leaving:
            return
        if code in _REJOIN:
            self._epoch, self._assignment = 0, {}
            self._next_heartbeat = 0.0
            return
        if code in _RECOORDINATE:
            self._coordinator = None
            self._next_heartbeat = time.monotonic() + 0.1
            return
        if code:
            raise error_for_code(code, r.get("error_message"))
        self._epoch = r["member_epoch"]
        self._interval = max(0.05, r["heartbeat_interval_ms"] / 1000.0)
        self._next_heartbeat = time.monotonic() + self._interval
        if r["assignment"] is not None:
            self._assignment = {bytes(t["topic_id"]): list(t["partitions"])
                                for t in r["assignment"]["topic_partitions"]}
            if any(t not in self._names for t in self._assignment):
                md = self._net.refresh_metadata(self._topics)
                self._names = {t.topic_id: name for name, t in md.topics.items()
                               if t.topic_id is not None}

    # -- acknowledging -----------------------------------------------------------------------

    def acknowledge(self, record: ShareRecord, ack_type: int = ACCEPT) -> None:
        if self.mode != "explicit":
            raise RuntimeError("acknowledge() is for acknowledgement_mode='explicit'; in "
                               "implicit mode the next poll accepts what the last returned")
        self.acknowledge_offset(record.topic, record.partition, record.offset, ack_type)

    def acknowledge_offset(self, topic: str, partition: int, offset: int,
                           ack_type: int = ACCEPT) -> None:
        if ack_type not in (ACCEPT, RELEASE, REJECT):
            raise ValueError("ack_type is ACCEPT (1), RELEASE (2) or REJECT (3)")
        tid = next((t for t, n in self._names.items() if n == topic), None)
        if tid is None or (topic, partition, offset) in self._acked:
            raise RuntimeError(f"{topic}-{partition}@{offset} is not in flight here")
        self._acked.add((topic, partition, offset))
        self._pending.setdefault((tid, partition), []).append((offset, ack_type))

    def _implicit_acks(self) -> None:
        if self.mode == "implicit":
            for r in self._delivered:
                if (r.topic, r.partition, r.offset) not in self._acked:
                    self.acknowledge_offset_internal(r)
        elif any((r.topic, r.partition, r.offset) not in self._acked for r in self._delivered):
            raise RuntimeError("explicit mode: acknowledge every record of the last poll "
                               "before polling again")
        self._delivered = []
        self._acked = set()

    def acknowledge_offset_internal(self, r: ShareRecord) -> None:
        tid = next(t for t, n in self._names.items() if n == r.topic)
        self._pending.setdefault((tid, r.partition), []).append((r.offset, ACCEPT))

    @staticmethod
    def _batches(acks: list) -> list[dict]:
        """Consecutive offsets of one type as one batch."""
        out: list[dict] = []
        for off, t in sorted(acks):
            if out and out[-1]["last_offset"] == off - 1 and out[-1]["acknowledge_types"] == [t]:
                out[-1]["last_offset"] = off
            else:
                out.append({"first_offset": off, "last_offset": off, "acknowledge_types": [t]})
        return out

    # -- fetching ----------------------------------------------------------------------------

    def poll(self, timeout: float = 1.0) -> list[ShareRecord]:
        if self.closed:
            raise RuntimeError("the share consumer is closed")
        if not self._topics:
            raise RuntimeError("subscribe() before poll()")
        self._implicit_acks()
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            if time.monotonic() >= self._next_heartbeat:
                self._heartbeat()
            out = self._fetch_once(max(0, int((deadline - time.monotonic()) * 1000)))
            if out or time.monotonic() >= deadline:
                self._delivered = out
                return out
            if not self._assignment:
                time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    def _by_leader(self) -> dict[int, list]:
        out: dict[int, list] = {}
        for tid, parts in self._assignment.items():
            name = self._names.get(tid)
            for p in parts:
                leader = self._net.metadata.leader_for(name, p) if name else -1
                if leader >= 0:
                    out.setdefault(leader, []).append((tid, p))
        for key in self._pending:                      # acks for partitions no longer ours
            leader = self._net.metadata.leader_for(self._names.get(key[0], ""), key[1])
            if leader >= 0 and key not in out.get(leader, []):
                out.setdefault(leader, []).append(key)
        return out

    def _fetch_once(self, wait_ms: int) -> list[ShareRecord]:
        records: list[ShareRecord] = []
        for leader, parts in self._by_leader().items():
            epoch = self._sessions.get(leader, 0)
            known = self._in_session.get(leader, set())
            topics: dict[bytes, list] = {}
            for tid, p in parts:
                acks = [] if epoch == 0 else self._batches(self._pending.pop((tid, p), []))
                if (tid, p) not in known or acks or epoch == 0:
                    topics.setdefault(tid, []).append({"partition_index": p,
                                                       "partition_max_bytes": 0,
                                                       "acknowledgement_batches": acks})
            body = {"group_id": self.group_id, "member_id": self.member_id,
                    "share_session_epoch": epoch, "max_wait_ms": min(wait_ms, 500),
                    "min_bytes": 1, "max_bytes": 50 << 20,
                    "max_records": self.max_poll_records, "batch_size": self.max_poll_records,
                    "share_acquire_mode": 0, "is_renew_ack": False,
                    "topics": [{"topic_id": t, "partitions": ps} for t, ps in topics.items()],
                    "forgotten_topics_data": []}
            version = min(2, self._net.api_version(leader, "ShareFetch") or 1)
            r = self._net.request(leader, "ShareFetch", body, version)
            if r["error_code"] in _SESSION_LOST:
                self._sessions[leader] = 0
                self._in_session[leader] = set()
                continue
            if r["error_code"]:
                raise error_for_code(r["error_code"], r.get("error_message"))
            self._sessions[leader] = 1 if epoch >= 0x7FFFFFFF else epoch + 1
            self._in_session[leader] = known | set(parts)
            for t in r["responses"]:
                name = self._names.get(bytes(t["topic_id"]))
                for p in t["partitions"]:
                    records += self._decode(name, p)
        return records

    def _decode(self, topic: str | None, p: dict) -> list[ShareRecord]:
        ranges = [(a["first_offset"], a["last_offset"], a["delivery_count"])
                  for a in p["acquired_records"]]
        if topic is None or not ranges or not p["records"]:
            return []
        out = []
        for b in decode_batches(bytes(p["records"])):
            if b.header.is_control:
                continue
            for rec in b.records:
                for first, last, count in ranges:
                    if first <= rec.offset <= last:
                        out.append(ShareRecord(topic, p["partition_index"], rec.offset,
                                               rec.timestamp, rec.key, rec.value,
                                               list(rec.headers), count))
                        break
        return out

    # -- committing and closing --------------------------------------------------------------

    def commit_sync(self, timeout: float | None = None) -> dict:
        """Send what was acknowledged now (ShareAcknowledge); {(topic, partition): error or
        None}."""
        if self.mode == "implicit":
            self._implicit_acks()
        return self._send_acks(final=False)

    def _send_acks(self, final: bool) -> dict:
        results: dict = {}
        by_leader: dict[int, dict] = {}
        for (tid, p), acks in list(self._pending.items()):
            leader = self._net.metadata.leader_for(self._names.get(tid, ""), p)
            if leader >= 0:
                by_leader.setdefault(leader, {}).setdefault(tid, []).append(
                    {"partition_index": p, "acknowledgement_batches": self._batches(acks)})
        self._pending.clear()
        for leader in set(by_leader) | (set(self._sessions) if final else set()):
            epoch = self._sessions.get(leader, 0)
            if epoch == 0:
                continue
            topics = by_leader.get(leader, {})
            r = self._net.request(leader, "ShareAcknowledge", {
                "group_id": self.group_id, "member_id": self.member_id,
                "share_session_epoch": -1 if final else epoch, "is_renew_ack": False,
                "topics": [{"topic_id": t, "partitions": ps} for t, ps in topics.items()]}, 1)
            if not final:
                self._sessions[leader] = epoch + 1
            for t in r["responses"]:
                for part in t["partitions"]:
                    code = part["error_code"] or r["error_code"]
                    key = (self._names.get(bytes(t["topic_id"])), part["partition_index"])
                    results[key] = error_for_code(code, part.get("error_message")) \
                        if code else None
        return results

    def close(self) -> None:
        if self.closed:
            return
        try:
            if self.mode == "implicit":
                self._implicit_acks()
            self._send_acks(final=True)
            if self._coordinator is not None and self._epoch:
                self._heartbeat(leaving=True)
        finally:
            self.closed = True
            self._net.close()

    def __enter__(self) -> "ShareConsumer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
