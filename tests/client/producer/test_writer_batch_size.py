"""The kafka-go Writer's batch_size: async writes are sent once batch_size messages have been
written, without waiting out batch_timeout (the engine's linger)."""
from __future__ import annotations

from gregor.client.producer.writer import Message, Writer
from tests.client.producer.fakes import FakeClock, FakeNetwork


def make_writer(**kw):
    clock = FakeClock()
    net = FakeNetwork(clock, {"t": 2})
    w = Writer(bootstrap_servers="fake:1", topic="t", async_=True, batch_timeout=3600.0,
               required_acks=1, _network=net, _clock=clock, _start=False, **kw)
    return w, net


def run(w, times=3):
    for _ in range(times):
        w._engine._sender.run_once()


def test_fewer_than_batch_size_messages_wait_for_the_timeout():
    w, net = make_writer(batch_size=10)
    w.write_messages(*[Message(value=b"v%d" % i) for i in range(9)])
    run(w)
    assert net.pending() == []


def test_batch_size_messages_are_sent_at_once():
    w, net = make_writer(batch_size=10)
    done = []
    w.completion = lambda msgs, err: done.append((len(msgs), err))
    w.write_messages(*[Message(value=b"v%d" % i) for i in range(6)])
    w.write_messages(*[Message(value=b"w%d" % i) for i in range(4)])   # 10 in all
    run(w)
    reqs = net.pending()
    assert sum(len(r.partitions()) for r in reqs) >= 1
    for r in reqs:
        net.answer_produce(r)
    assert done == [(6, None), (4, None)]


def test_send_open_batches_sends_staged_and_open_records_before_linger():
    from tests.client.producer.fakes import make_producer
    p, net, clock = make_producer({"t": 3}, acks=1, **{"linger.ms": 3_600_000})
    futs = [p.send("t", b"v", key=b"k%d" % i) for i in range(20)]      # keyed: staged
    futs += [p.send("t", b"v", partition=1) for _ in range(3)]         # an open batch
    for _ in range(3):
        p._sender.run_once()
    assert net.pending() == []
    p.send_open_batches()
    for _ in range(3):
        p._sender.run_once()
    for r in net.pending():
        net.answer_produce(r)
    assert all(f.done() for f in futs)
