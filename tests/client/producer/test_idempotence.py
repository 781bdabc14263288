"""Idempotent delivery on a fake network: producer id first, sequence numbers per partition,
ordered retries with several batches in flight, epoch bumps."""
from __future__ import annotations

from gregor.protocol.errors import ErrorCode
from tests.client.producer.fakes import batch_headers, make_producer


def run(p, times=2):
    for _ in range(times):
        p._sender.run_once()


def start(partitions=None, **conf):
    conf.setdefault("linger.ms", 0)
    conf.setdefault("retry.backoff.ms", 1)
    conf.setdefault("batch.size", 600)
    p, net, clock = make_producer(partitions or {"t": 2}, **conf)
    run(p)
    [init] = net.pending("InitProducerId")
    assert init.request_body["producer_id"] == -1
    net.answer_init(init, pid=77, epoch=0)
    return p, net, clock


def send_batches(p, n, partition=0, size=500):
    """n batches, each drained on its own (queued ones would be merged into one)."""
    futs = []
    for i in range(n):
        futs.append(p.send("t", b"%04d" % i + b"x" * size, partition=partition))
        p._sender.run_once()
    return futs


def test_no_produce_before_producer_id():
    p, net, clock = make_producer({"t": 1}, **{"linger.ms": 0})
    p.send("t", b"v")
    run(p, 3)
    assert net.pending() == [] and len(net.pending("InitProducerId")) == 1


def test_sequences_per_partition_advance_by_record_count():
    p, net, clock = start()
    for i in range(3):
        p.send("t", b"a%d" % i, partition=0)
    p.send("t", b"b", partition=1)
    run(p)
    heads = {pp: h for req in net.pending() for _, pp, h, _ in batch_headers(req)}
    assert heads[0].producer_id == 77 and heads[0].producer_epoch == 0
    assert heads[0].base_sequence == 0 and heads[1].base_sequence == 0
    for req in net.pending():
        net.answer_produce(req)
    p.send("t", b"a3", partition=0)
    run(p)
    [(_, _, h, _)] = batch_headers(net.pending()[0])
    assert h.base_sequence == 3


def test_at_most_five_batches_in_flight_per_partition():
    p, net, clock = start(**{"max.in.flight.requests.per.connection": 5})
    net.max_in_flight = 100                 # the connection would take more
    send_batches(p, 8)
    run(p, 10)
    assert len(net.pending()) == 5


def test_retry_keeps_sequence_and_order_with_five_in_flight():
    p, net, clock = start()
    futs = send_batches(p, 5)
    run(p, 6)
    reqs = net.pending()
    assert len(reqs) == 5
    seqs = [batch_headers(r)[0][2].base_sequence for r in reqs]
    # The first fails retriably; the broker rejects the next four as out of order.
    net.answer_produce(reqs[0], errors={("t", 0): ErrorCode.NOT_LEADER_OR_FOLLOWER})
    for r in reqs[1:]:
        net.answer_produce(r, errors={("t", 0): ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER})
    assert p._txn.producer_epoch == 0 and p._txn.state == "ready"   # no bump for echoes
    log = []                                 # (base_sequence, values) as the broker sees them
    offset = 0
    for _ in range(40):
        clock.advance(0.01)
        run(p, 1)
        for r in net.pending():
            for _, _, h, vals in batch_headers(r):
                log.append(h.base_sequence)
                net.answer_produce(r, offsets={("t", 0): offset})
                offset += len(vals)
        if all(f.done() for f in futs):
            break
    assert log == seqs                       # same sequences, same order, each once
    assert [f.result(0).offset for f in futs] == sorted(f.result(0).offset for f in futs)


def test_retried_batch_goes_out_alone():
    p, net, clock = start()
    send_batches(p, 3)
    run(p, 4)
    first, *rest = net.pending()
    net.answer_produce(first, errors={("t", 0): ErrorCode.NOT_ENOUGH_REPLICAS})
    clock.advance(0.01)
    run(p, 2)
    # Two are still in flight: the retry waits for them.
    assert len(net.pending()) == 2
    for r in rest:
        net.answer_produce(r, errors={("t", 0): ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER})
    clock.advance(0.01)
    run(p, 2)
    assert len(net.pending()) == 1
    assert batch_headers(net.pending()[0])[0][2].base_sequence == 0


def test_out_of_order_on_first_in_flight_bumps_epoch_and_resends_from_zero():
    p, net, clock = start()
    futs = send_batches(p, 2)
    run(p, 3)
    reqs = net.pending()
    net.answer_produce(reqs[0], errors={("t", 0): ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER})
    net.answer_produce(reqs[1], errors={("t", 0): ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER})
    assert p._txn.state == "bump_pending"
    clock.advance(0.01)
    run(p, 2)
    [init] = net.pending("InitProducerId")
    # Produce v3+ brokers raise the epoch of our id rather than handing out a new one.
    assert init.request_body["producer_id"] == 77 and init.request_body["producer_epoch"] == 0
    net.answer_init(init, pid=77, epoch=1)
    seen = []
    for _ in range(20):
        clock.advance(0.01)
        run(p, 1)
        for r in net.pending():
            for _, _, h, _ in batch_headers(r):
                seen.append((h.producer_epoch, h.base_sequence))
            net.answer_produce(r)
        if all(f.done() for f in futs):
            break
    assert seen[0] == (1, 0) and [s for _, s in seen] == sorted(s for _, s in seen)
    assert all(f.succeeded() for f in futs)


def test_unknown_producer_id_bumps_epoch():
    p, net, clock = start()
    fut = p.send("t", b"v", partition=0)
    run(p)
    net.answer_produce(net.pending()[0], errors={("t", 0): ErrorCode.UNKNOWN_PRODUCER_ID})
    clock.advance(0.01)
    run(p)
    net.answer_init(net.pending("InitProducerId")[0], pid=77, epoch=1)
    clock.advance(0.01)
    run(p)
    [(_, _, h, _)] = batch_headers(net.pending()[0])
    assert (h.producer_epoch, h.base_sequence) == (1, 0)
    net.answer_produce(net.pending()[0])
    assert fut.succeeded()


def test_duplicate_sequence_counts_as_success():
    p, net, clock = start()
    fut = p.send("t", b"v", partition=0)
    run(p)
    net.answer_produce(net.pending()[0], errors={("t", 0): ErrorCode.DUPLICATE_SEQUENCE_NUMBER},
                       offsets={("t", 0): 12})
    assert fut.result(0).offset == 12


def test_fenced_epoch_is_fatal_for_the_batch():
    p, net, clock = start()
    fut = p.send("t", b"v", partition=0)
    run(p)
    net.answer_produce(net.pending()[0], errors={("t", 0): ErrorCode.INVALID_PRODUCER_EPOCH})
    assert fut.failed()


def test_expired_in_flight_batch_bumps_epoch():
    p, net, clock = start(**{"delivery.timeout.ms": 2000, "request.timeout.ms": 1000})
    fut = p.send("t", b"v", partition=0)
    run(p)
    clock.advance(2.5)
    run(p)
    assert fut.failed() and p._txn.state == "bump_pending"


def test_send_batch_encoded_by_the_caller_gets_its_sequence_at_drain():
    p, net, clock = start()
    for i in range(3):
        p.send("t", b"a%d" % i, partition=0)
    run(p)
    for req in net.pending():
        net.answer_produce(req)
    res = p.send_batch("t", [b"b%d" % i for i in range(4)], keys=[b"k"] * 4, partition=0)
    [queued] = [b for b in p._acc.incomplete if b.bulk]
    assert queued.data is not None and queued.keys is None   # encoded before it was queued
    run(p)
    [(_, part, head, values)] = batch_headers(net.pending()[-1])   # CRC checked on decode
    assert (part, head.producer_id, head.producer_epoch, head.base_sequence) == (0, 77, 0, 3)
    assert values == [b"b%d" % i for i in range(4)]
    net.answer_produce(net.pending()[-1], offsets={("t", 0): 3})
    [md] = res.result(1)
    assert (md.base_offset, md.record_count) == (3, 4)
    p.flush(1)
    assert p._pool.available == p._pool.total   # the pool reservation came back in full
