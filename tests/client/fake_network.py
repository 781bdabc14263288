"""An in-memory stand-in for NetworkClient that answers Metadata, Fetch and ListOffsets from
per-partition lists of v2 batches: enough to test the consumer's logic without sockets."""
from __future__ import annotations

import collections

from gregor.client.metadata import Metadata
from gregor.protocol.records.batch import encode_batch
from gregor.protocol.records.header import iter_headers

OFFSET_OUT_OF_RANGE = 1
NOT_LEADER = 6


class FakeRequest:
    def __init__(self, node_id, api, body, version=None):
        self.node_id = node_id
        self.version = version
        self.api_name = api
        self.request_body = body
        self.body = None
        self.error = None
        self.done = False


class FakeNetwork:
    def __init__(self, partitions: dict[str, int], leader: int = 0):
        self.metadata = Metadata(300000)
        self.clock_now = 0.0
        self.logs: dict[tuple[str, int], list[bytes]] = {
            (t, p): [] for t, n in partitions.items() for p in range(n)}
        self.start_offsets = collections.defaultdict(int)
        self.leader = leader
        self.partitions = partitions
        self.injected: dict[tuple[str, int], list[int]] = collections.defaultdict(list)
        self.sent: list[FakeRequest] = []
        self.pending: list[FakeRequest] = []
        self.closed = False
        self._update_metadata()

    # -- test helpers --------------------------------------------------------------------------
    def clock(self):
        return self.clock_now

    def _update_metadata(self):
        body = {"brokers": [{"node_id": self.leader, "host": "fake", "port": 1}],
                "controller_id": self.leader, "cluster_id": "fake",
                "topics": [{"error_code": 0, "name": t, "is_internal": False, "partitions": [
                    {"error_code": 0, "partition_index": p, "leader_id": self.leader,
                     "leader_epoch": 0, "replica_nodes": [self.leader],
                     "isr_nodes": [self.leader]} for p in range(n)]}
                    for t, n in self.partitions.items()]}
        self.metadata.update(body, self.clock_now)

    def end_offset(self, tp) -> int:
        last = self.start_offsets[tp]
        for batch in self.logs[tp]:
            for _, h in iter_headers(batch):
                last = h.last_offset + 1
        return last

    def append(self, topic, partition, values, keys=None, timestamps=None, headers=None):
        tp = (topic, partition)
        base = self.end_offset(tp)
        n = len(values)
        keys = keys or [None] * n
        timestamps = timestamps or [1000 + base + i for i in range(n)]
        headers = headers or [None] * n
        self.logs[tp].append(encode_batch(list(zip(timestamps, keys, values, headers)),
                                          base_offset=base))
        return base

    def inject(self, topic, partition, *codes):
        self.injected[(topic, partition)].extend(codes)

    # -- the NetworkClient surface the consumer uses ------------------------------------------
    def ready(self, node, now=None):
        return node == self.leader

    def api_version_for(self, node, name):
        return {"Fetch": 12, "ListOffsets": 7, "Metadata": 12}.get(name)

    def api_version(self, node, name, timeout=None):
        return self.api_version_for(node, name)

    def send(self, node, api, body, version=None, timeout=None, **kw):
        req = FakeRequest(node, api, body, version)
        self.sent.append(req)
        self.pending.append(req)
        return req

    def poll(self, timeout):
        for req in self.pending:
            req.body = self._answer(req.api_name, req.request_body)
            req.done = True
        done, self.pending = self.pending, []
        self.clock_now += timeout
        return done

    def maybe_update_metadata(self, now):
        if self.metadata.needs_update(now):
            self._update_metadata()
        return 1.0

    def refresh_metadata(self, topics=None, timeout=None):
        self._update_metadata()
        return self.metadata

    def send_many(self, requests, timeout=None):
        return [self._answer(api, body) for _, api, body, _ in requests]

    def request(self, node, api, body, version=None, timeout=None):
        return self._answer(api, body)

    def authentication_failure(self, node_id=None):
        return None                      # no TLS / SASL here

    def wakeup(self):
        pass

    def close(self):
        self.closed = True

    # -- the fake broker -----------------------------------------------------------------------
    def _answer(self, api, body):
        if api == "Fetch":
            return self._fetch(body)
        if api == "ListOffsets":
            return self._list_offsets(body)
        raise AssertionError(f"unexpected {api}")

    def _fetch(self, body):
        responses = []
        for t in body["topics"]:
            parts = []
            for p in t["partitions"]:
                tp = (t["topic"], p["partition"])
                code, data = 0, b""
                if self.injected[tp]:
                    code = self.injected[tp].pop(0)
                else:
                    off = p["fetch_offset"]
                    if off < self.start_offsets[tp] or off > self.end_offset(tp):
                        code = OFFSET_OUT_OF_RANGE
                    else:
                        chunks = []
                        for batch in self.logs[tp]:
                            for _, h in iter_headers(batch):
                                if h.last_offset >= off:
                                    chunks.append(batch)
                        data = b"".join(chunks)[:max(p["partition_max_bytes"],
                                                     len(chunks[0]) if chunks else 0)]
                parts.append({"partition_index": tp[1], "error_code": code,
                              "high_watermark": self.end_offset(tp), "last_stable_offset": -1,
                              "log_start_offset": self.start_offsets[tp],
                              "aborted_transactions": None, "records": data})
            responses.append({"topic": t["topic"], "partitions": parts})
        return {"error_code": 0, "responses": responses}

    def _list_offsets(self, body):
        topics = []
        for t in body["topics"]:
            parts = []
            for p in t["partitions"]:
                tp = (t["name"], p["partition_index"])
                ts = p["timestamp"]
                if ts == -2:
                    off, rts = self.start_offsets[tp], -1
                elif ts == -1:
                    off, rts = self.end_offset(tp), -1
                else:
                    off, rts = -1, -1
                    for batch in self.logs[tp]:
                        from gregor.protocol.records.batch import decode_batches
                        for b in decode_batches(batch):
                            for r in b.records:
                                if r.timestamp >= ts and off < 0:
                                    off, rts = r.offset, r.timestamp
                parts.append({"partition_index": tp[1], "error_code": 0, "offset": off,
                              "timestamp": rts, "leader_epoch": 0})
            topics.append({"name": t["name"], "partitions": parts})
        return {"topics": topics}
