"""Property: with idempotence, whatever the broker does (retriable errors, lost responses after
a successful append), every record lands exactly once and in send order per partition, and each
future reports the record's real offset. The broker here is a small model of Kafka's producer
state checks (next sequence, duplicates within the last 5 batches)."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st

from gregor.client.errors import KafkaConnectionError
from gregor.protocol.errors import ErrorCode
from gregor.protocol.records.batch import decode_batches
from tests.client.producer.fakes import make_producer


class ModelBroker:
    def __init__(self):
        self.logs: dict[int, list[bytes]] = {}
        self.state: dict[int, tuple] = {}       # partition -> (pid, epoch, next_seq)
        self.recent: dict[int, list] = {}       # partition -> [(pid, epoch, seq, base_offset)]

    def append(self, partition, data):
        """(error_code, base_offset) the way a Kafka broker answers a batch."""
        [b] = decode_batches(data)
        h = b.header
        log = self.logs.setdefault(partition, [])
        for pid, epoch, seq, off in self.recent.get(partition, []):
            if (pid, epoch, seq) == (h.producer_id, h.producer_epoch, h.base_sequence):
                return ErrorCode.NONE, off      # a duplicate: the original offset
        pid, epoch, nxt = self.state.get(partition, (None, None, 0))
        fresh_epoch = (pid, epoch) != (h.producer_id, h.producer_epoch)
        if (fresh_epoch and h.base_sequence != 0) or (not fresh_epoch and h.base_sequence != nxt):
            return ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, -1
        base = len(log)
        log.extend(r.value for r in b.records)
        self.state[partition] = (h.producer_id, h.producer_epoch,
                                 h.base_sequence + len(b.records))
        recent = self.recent.setdefault(partition, [])
        recent.append((h.producer_id, h.producer_epoch, h.base_sequence, base))
        del recent[:-5]
        return ErrorCode.NONE, base


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sends=st.lists(st.tuples(st.integers(0, 2), st.integers(1, 400)), min_size=1,
                      max_size=60),
       faults=st.lists(st.sampled_from(["ok", "ok", "ok", "retriable", "lost"]),
                       min_size=200, max_size=200))
def test_exactly_once_in_order_whatever_the_broker_does(sends, faults):
    p, net, clock = make_producer({"t": 3}, **{"linger.ms": 0, "batch.size": 1000,
                                               "retry.backoff.ms": 1})
    broker = ModelBroker()
    futs = []
    for i, (part, size) in enumerate(sends):
        futs.append((part, b"%05d" % i + b"x" * size, None))
    futs = [(part, v, p.send("t", v, partition=part)) for part, v, _ in futs]
    fault = iter(faults)
    for _ in range(2000):
        clock.advance(0.01)
        p._sender.run_once()
        for init in net.pending("InitProducerId"):
            net.answer_init(init, pid=5, epoch=(p._txn.producer_epoch + 1))
        for req in net.pending():
            f = next(fault, "ok")
            if f == "retriable":
                net.answer_produce(req, errors={(t, pp): ErrorCode.NOT_LEADER_OR_FOLLOWER
                                                for t, pp, _ in req.partitions()})
                continue
            errors, offsets = {}, {}
            for t, pp, data in req.partitions():
                code, off = broker.append(pp, data)
                errors[(t, pp)], offsets[(t, pp)] = code, off
            if f == "lost":                     # appended, but the answer never arrives
                net.fail(req, KafkaConnectionError("connection reset"))
            else:
                net.answer_produce(req, errors=errors, offsets=offsets)
        if all(fut.done() for _, _, fut in futs):
            break
    assert all(fut.succeeded() for _, _, fut in futs)
    for part in range(3):
        sent = [v for pp, v, _ in futs if pp == part]
        assert broker.logs.get(part, []) == sent            # once each, in send order
    for part, v, fut in futs:
        assert broker.logs[part][fut.result(0).offset] == v
