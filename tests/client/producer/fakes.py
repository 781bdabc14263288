"""A fake network and clock for driving the producer's Sender by hand, without sockets."""
from __future__ import annotations

from gregor.client.metadata import Metadata
from gregor.client.producer.producer import Producer
from gregor.protocol.records.batch import decode_batches


class FakeClock:
    def __init__(self, t: float = 1000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, s: float) -> None:
        self.t += s


class FakeRequest:
    def __init__(self, node_id, api, body, version, callback, now):
        self.node_id = node_id
        self.api = api
        self.request_body = body
        self.version = version
        self.callback = callback
        self.send_time = now
        self.body = None
        self.error = None
        self.done = False

    # -- helpers for tests -------------------------------------------------------------------
    def partitions(self):
        """[(topic, partition, batch bytes)] of a Produce request, in request order."""
        return [(t["name"], p["index"], p["records"])
                for t in self.request_body["topic_data"] for p in t["partition_data"]]


class FakeNetwork:
    """Every node is always ready (unless listed in `down`); sent requests wait in `sent`
    until the test answers them with respond()/fail()."""

    def __init__(self, clock, partitions: dict[str, int], leader: int = 1, versions=None,
                 leaders: dict[str, list[int]] | None = None):
        """`leaders` {topic: [node of partition 0, 1, ...]} spreads partitions over several
        nodes; otherwise `leader` leads them all."""
        self.clock = clock
        self.metadata = Metadata(300000)
        leaders = {t: (leaders or {}).get(t) or [leader] * n for t, n in partitions.items()}
        nodes = sorted({node for ls in leaders.values() for node in ls} or {leader})
        self.metadata.update({
            "brokers": [{"node_id": node, "host": "fake", "port": node} for node in nodes],
            "topics": [{"error_code": 0, "name": t, "partitions": [
                {"error_code": 0, "partition_index": i, "leader_id": leaders[t][i],
                 "replica_nodes": [leaders[t][i]], "isr_nodes": [leaders[t][i]]}
                for i in range(n)]}
                for t, n in partitions.items()]}, clock())
        self.sent: list[FakeRequest] = []
        self.down: set[int] = set()
        self.versions = versions or {"Produce": 9, "InitProducerId": 4}
        self.max_in_flight = 5
        self.wakeups = 0

    # -- the NetworkClient surface the sender uses -------------------------------------------
    def ready(self, node, now=None):
        return node not in self.down and self.in_flight_count(node) < self.max_in_flight

    def connection_delay(self, node, now):
        return 0.0

    def maybe_update_metadata(self, now):
        return 300.0

    def least_loaded_node(self, now=None):
        return next(iter(self.metadata.brokers))

    def time_to_next_attempt(self, now):
        return 0.0

    def api_version_for(self, node, api):
        return self.versions.get(api)

    def send(self, node, api, body, version=None, callback=None, expect_response=True,
             now=None, timeout=None):
        req = FakeRequest(node, api, body, version, callback, self.clock() if now is None
                          else now)
        if expect_response:
            self.sent.append(req)
        return req

    def poll(self, timeout):
        return []

    def authentication_failure(self, node_id=None):
        return None                      # no TLS / SASL here

    def wakeup(self):
        self.wakeups += 1

    def in_flight_count(self, node=None):
        return sum(1 for r in self.sent if not r.done and (node is None or r.node_id == node))

    def close(self):
        pass

    # -- answering ---------------------------------------------------------------------------
    def pending(self, api="Produce"):
        return [r for r in self.sent if not r.done and r.api == api]

    def respond(self, req, body):
        req.body = body
        req.done = True
        if req.callback:
            req.callback(req)

    def fail(self, req, err):
        req.error = err
        req.done = True
        if req.callback:
            req.callback(req)

    def answer_produce(self, req, errors=None, offsets=None):
        """Answer a Produce request: errors {(topic, p): code}; offsets {(topic, p): base}."""
        errors = errors or {}
        offsets = offsets or {}
        responses = {}
        for t, p, _ in req.partitions():
            responses.setdefault(t, []).append({
                "index": p, "error_code": errors.get((t, p), 0),
                "base_offset": offsets.get((t, p), 0), "log_append_time_ms": -1})
        self.respond(req, {"responses": [{"name": t, "partition_responses": ps}
                                         for t, ps in responses.items()]})

    def answer_init(self, req, pid=7, epoch=0, error=0):
        self.respond(req, {"throttle_time_ms": 0, "error_code": error, "producer_id": pid,
                           "producer_epoch": epoch})


def make_producer(partitions=None, leaders=None, **conf):
    """A Producer on a FakeNetwork and FakeClock whose sender runs only when the test calls
    producer._sender.run_once()."""
    clock = FakeClock()
    net = FakeNetwork(clock, partitions or {"t": 1}, leaders=leaders)
    conf.setdefault("bootstrap.servers", "fake:1")
    p = Producer(conf, _network=net, _clock=clock, _start=False)
    return p, net, clock


def batch_headers(req):
    """[(topic, partition, BatchHeader, [values])] of a Produce request."""
    out = []
    for t, p, data in req.partitions():
        for b in decode_batches(data):
            out.append((t, p, b.header, [r.value for r in b.records]))
    return out
