"""batch.num.messages on a fake network and clock: no batch the producer sends holds more records
than that, whatever built it (send(), merges under back-pressure, keyed staging, send_batch);
records arrive in order, futures and callbacks follow them, idempotent sequences stay
contiguous."""
from __future__ import annotations

import pytest

from gregor.client.errors import ConfigError
from gregor.client.producer.hashing import murmur2, to_positive
from tests.client.producer.fakes import batch_headers, make_producer


class FakeLog:
    """Answers Produce requests like a broker: per partition, offsets in arrival order."""

    def __init__(self, net):
        self.net = net
        self.values: dict[tuple, list] = {}
        self.batches: list[tuple] = []       # (topic, partition, record count, base sequence)

    def answer_all(self):
        for req in self.net.pending():
            offsets = {}
            for t, p, header, values in batch_headers(req):
                log = self.values.setdefault((t, p), [])
                offsets[(t, p)] = len(log)
                log.extend(values)
                self.batches.append((t, p, len(values), header.base_sequence))
            self.net.answer_produce(req, offsets=offsets)

    def counts(self):
        return [n for _, _, n, _ in self.batches]


def deliver(p, net, clock, log, rounds=200):
    for _ in range(rounds):
        p._sender.run_once()
        log.answer_all()
        clock.advance(0.01)
        if not p._acc.has_undrained() and not net.pending():
            return
    raise AssertionError("the producer did not drain")


def start(partitions=None, idempotent=False, **conf):
    conf = {"linger.ms": 50, "retry.backoff.ms": 1, **conf}
    if not idempotent:
        conf["acks"] = 1
    p, net, clock = make_producer(partitions or {"t": 1}, **conf)
    if idempotent:
        p._sender.run_once()
        [init] = net.pending("InitProducerId")
        net.answer_init(init, pid=5, epoch=0)
    return p, net, clock, FakeLog(net)


def test_config_default_is_no_limit_and_zero_is_refused():
    p, *_ = start()
    assert p.config["batch.num.messages"] is None and p._acc.max_records is None
    with pytest.raises(ConfigError, match="batch.num.messages"):
        start(**{"batch.num.messages": 0})
    p, *_ = start(batch_num_messages="25")
    assert p._acc.max_records == 25


def test_one_large_send_batch_leaves_in_batches_of_at_most_n_in_order():
    p, net, clock, log = start(**{"batch.num.messages": 7})
    calls = []
    done = []
    futs = []
    for i in range(100):
        f = p.send("t", b"%03d" % i, callback=lambda md, err, i=i: calls.append((i, md.offset)))
        f.add_done_callback(lambda fut, i=i: done.append(i))
        futs.append(f)
    assert max(b.record_count for b in p._acc.queued_batches()) == 100   # one open batch
    deliver(p, net, clock, log)
    assert log.counts() == [7] * 14 + [2]
    assert log.values[("t", 0)] == [b"%03d" % i for i in range(100)]
    assert [f.result(0).offset for f in futs] == list(range(100))
    assert calls == [(i, i) for i in range(100)]
    assert done == list(range(100))
    assert p._pool.available == p._pool.total


def test_a_batch_with_n_records_is_sent_before_linger():
    p, net, clock, log = start(**{"batch.num.messages": 5, "linger.ms": 10_000})
    for i in range(4):
        p.send("t", b"x")
    p._sender.run_once()
    assert net.pending() == []
    p.send("t", b"x")
    p._sender.run_once()
    [req] = net.pending()
    assert [len(v) for *_, v in batch_headers(req)] == [5]


def test_merges_under_back_pressure_stay_within_n():
    # Small batches pile up while the first request is unanswered; the drain merges them,
    # but never past batch.num.messages.
    p, net, clock, log = start(**{"batch.num.messages": 10, "batch.size": 200,
                                  "linger.ms": 0})
    net.max_in_flight = 1
    futs = [p.send("t", b"%03d" % i + b"y" * 20) for i in range(3)]
    p._sender.run_once()
    assert len(net.pending()) == 1
    futs += [p.send("t", b"%03d" % i + b"y" * 20) for i in range(3, 200)]
    per_batch = max(b.record_count for b in p._acc.queued_batches())
    assert 2 * per_batch <= 10
    deliver(p, net, clock, log)
    counts = log.counts()
    assert per_batch < max(counts) <= 10           # merged, up to the cap
    # Whole batches merged: the merge stops at the cap instead of leaving a split behind.
    assert all(c % per_batch == 0 for c in counts[:-1])
    assert log.values[("t", 0)] == [b"%03d" % i + b"y" * 20 for i in range(200)]
    assert [f.result(0).offset for f in futs] == list(range(200))


def test_keyed_staging_batches_stay_within_n():
    p, net, clock, log = start({"t": 3}, **{"batch.num.messages": 6})
    keys = [b"k%d" % (i % 17) for i in range(300)]
    futs = [p.send("t", b"%03d" % i, key=k) for i, k in enumerate(keys)]
    deliver(p, net, clock, log)
    assert max(log.counts()) <= 6
    want = {pp: [b"%03d" % i for i, k in enumerate(keys) if to_positive(murmur2(k)) % 3 == pp]
            for pp in range(3)}
    assert {pp: log.values[("t", pp)] for pp in range(3)} == want
    for i, (k, f) in enumerate(zip(keys, futs)):
        md = f.result(0)
        assert md.partition == to_positive(murmur2(k)) % 3
        assert log.values[("t", md.partition)][md.offset] == b"%03d" % i


@pytest.mark.parametrize("n", [1000, 50])     # Arrow (>= 1000 records) and list inputs
def test_send_batch_makes_batches_of_at_most_n(n):
    p, net, clock, log = start({"t": 2}, **{"batch.num.messages": 16})
    values = [b"%04d" % i for i in range(n)]
    res = p.send_batch("t", values, partition=1)
    keyed = p.send_batch("t", values, keys=[b"k%d" % i for i in range(n)])
    deliver(p, net, clock, log)
    assert max(log.counts()) <= 16
    assert log.values[("t", 1)][:n] == values
    metas = res.result(0)
    assert [m.record_count for m in metas] == [16] * (n // 16) + ([n % 16] if n % 16 else [])
    assert [m.base_offset for m in metas] == list(range(0, n, 16))
    assert sum(m.record_count for m in keyed.result(0)) == n


def test_idempotent_sequences_stay_contiguous():
    p, net, clock, log = start({"t": 2}, idempotent=True, **{"batch.num.messages": 4})
    futs = [p.send("t", b"%03d" % i, partition=i % 2) for i in range(90)]
    deliver(p, net, clock, log)
    assert max(log.counts()) <= 4
    for pp in range(2):
        batches = [(n, seq) for t, q, n, seq in log.batches if q == pp]
        seqs = [seq for _, seq in batches]
        assert seqs == [sum(n for n, _ in batches[:j]) for j in range(len(batches))]
        assert log.values[("t", pp)] == [b"%03d" % i for i in range(pp, 90, 2)]
    assert [f.result(0).offset for f in futs] == [i // 2 for i in range(90)]
    assert p._txn.bumps == 0


def test_split_keeps_headers_null_values_and_timestamps():
    from gregor.protocol.records.batch import decode_batches
    p, net, clock, log = start(**{"batch.num.messages": 3})
    sent = []
    for i in range(10):
        key = None if i % 2 else b"k%d" % i
        value = None if i % 3 == 0 else b"v%d" % i
        headers = [("h", b"%d" % i)] if i % 4 == 0 else None
        p.send("t", value, key=key, headers=headers, partition=0, timestamp_ms=1_000 + i)
        sent.append((key, value, headers or [], 1_000 + i))
    got = []
    for _ in range(20):
        p._sender.run_once()
        for req in net.pending():
            for *_, data in req.partitions():
                for b in decode_batches(data):
                    assert len(b.records) <= 3
                    got += [(r.key, r.value, [(k, v) for k, v in (r.headers or [])],
                             r.timestamp) for r in b.records]
            net.answer_produce(req)
        clock.advance(0.01)
    assert got == sent
    assert p._pool.available == p._pool.total
