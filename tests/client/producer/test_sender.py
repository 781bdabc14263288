"""The Sender driven by hand on a fake network and clock: requests, acknowledgements, retries,
expiry, splitting, callbacks."""
from __future__ import annotations

import logging

import pytest

from gregor.client.errors import KafkaConnectionError, KafkaTimeoutError
from gregor.protocol.errors import ErrorCode
from tests.client.producer.fakes import batch_headers, make_producer


def run(p, times=3):
    for _ in range(times):
        p._sender.run_once()


def test_one_produce_request_per_broker_and_offsets_in_order():
    p, net, clock = make_producer({"t": 3}, acks=1, **{"linger.ms": 5})
    futs = [p.send("t", b"v%d" % i, partition=i % 3) for i in range(9)]
    run(p)
    assert net.pending() == []                       # linger not over yet
    clock.advance(0.006)
    run(p)
    [req] = net.pending()
    assert sorted(pp for _, pp, _ in req.partitions()) == [0, 1, 2]
    assert req.request_body["acks"] == 1
    net.answer_produce(req, offsets={("t", 0): 100, ("t", 1): 200, ("t", 2): 300})
    md = [f.result(0) for f in futs]
    assert [(m.partition, m.offset) for m in md[:3]] == [(0, 100), (1, 200), (2, 300)]
    assert [(m.partition, m.offset) for m in md[3:6]] == [(0, 101), (1, 201), (2, 301)]
    assert p.metrics()["record-send-total"] == 9
    assert p._pool.available == p._pool.total       # memory returned


def test_callbacks_run_in_append_order_and_their_errors_are_logged(caplog):
    p, net, clock = make_producer({"t": 1}, acks=1)
    order = []

    def cb(i):
        def f(md, err):
            order.append(i)
            if i == 1:
                raise RuntimeError("user callback bug")
        return f
    for i in range(4):
        p.send("t", b"x" * 6000, callback=cb(i))    # several batches
    clock.advance(1)
    for _ in range(4):
        run(p, 1)
        for req in net.pending():
            net.answer_produce(req)
    with caplog.at_level(logging.ERROR):
        run(p, 2)
    assert order == [0, 1, 2, 3]
    assert "user callback bug" in caplog.text or any("raised" in r.message
                                                     for r in caplog.records)


def test_retriable_error_retries_after_backoff_and_refreshes_metadata():
    p, net, clock = make_producer({"t": 1}, acks=1, **{"retry.backoff.ms": 100})
    fut = p.send("t", b"v")
    clock.advance(1)
    run(p)
    [req] = net.pending()
    net.answer_produce(req, errors={("t", 0): ErrorCode.NOT_LEADER_OR_FOLLOWER})
    assert net.metadata.needs_update(clock())
    assert not fut.done()
    run(p)
    assert net.pending() == []                       # backing off
    clock.advance(0.2)
    run(p)
    [again] = net.pending()
    net.answer_produce(again, offsets={("t", 0): 5})
    assert fut.result(0).offset == 5
    assert p.metrics()["record-retry-total"] == 1


def test_non_retriable_error_fails_the_records():
    p, net, clock = make_producer({"t": 1}, acks=1)
    futs = [p.send("t", b"v") for _ in range(3)]
    clock.advance(1)
    run(p)
    net.answer_produce(net.pending()[0], errors={("t", 0): ErrorCode.INVALID_RECORD})
    for f in futs:
        with pytest.raises(Exception) as e:
            f.result(0)
        assert getattr(e.value, "name", "") == "INVALID_RECORD"
    assert p.metrics()["record-error-total"] == 3


def test_disconnect_is_retried():
    p, net, clock = make_producer({"t": 1}, acks=1, **{"retry.backoff.ms": 1})
    fut = p.send("t", b"v")
    clock.advance(1)
    run(p)
    net.fail(net.pending()[0], KafkaConnectionError("gone"))
    clock.advance(0.1)
    run(p)
    net.answer_produce(net.pending()[0], offsets={("t", 0): 9})
    assert fut.result(0).offset == 9


def test_delivery_timeout_expires_queued_and_in_flight_batches():
    p, net, clock = make_producer({"t": 1}, acks=1, **{
        "delivery.timeout.ms": 2000, "request.timeout.ms": 1000, "linger.ms": 0})
    net.down.add(1)                                   # the leader cannot be reached
    queued = p.send("t", b"v")
    run(p)
    clock.advance(2.1)
    run(p)
    with pytest.raises(KafkaTimeoutError, match="delivery.timeout.ms"):
        queued.result(0)
    net.down.clear()
    inflight = p.send("t", b"w")
    run(p)
    assert len(net.pending()) == 1
    clock.advance(2.1)
    run(p)
    with pytest.raises(KafkaTimeoutError):
        inflight.result(0)
    net.answer_produce(net.pending()[0])              # a late answer changes nothing
    with pytest.raises(KafkaTimeoutError):
        inflight.result(0)
    assert p._pool.available == p._pool.total


def test_message_too_large_splits_the_batch():
    p, net, clock = make_producer({"t": 1}, acks=1)
    futs = [p.send("t", b"%03d" % i + b"x" * 500) for i in range(20)]
    clock.advance(1)
    run(p)
    [req] = net.pending()
    net.answer_produce(req, errors={("t", 0): ErrorCode.MESSAGE_TOO_LARGE})
    offsets = iter(range(0, 1000, 100))
    values = []
    for _ in range(10):
        run(p, 1)
        for r in net.pending():
            for _, _, _, vals in batch_headers(r):
                values += vals
            net.answer_produce(r, offsets={("t", 0): next(offsets)})
        if all(f.done() for f in futs):
            break
    assert values == [b"%03d" % i + b"x" * 500 for i in range(20)]   # order kept
    mds = [f.result(0) for f in futs]
    assert mds[0].offset == 0 and len({m.offset for m in mds}) == 20


def test_acks_zero_completes_without_offsets():
    p, net, clock = make_producer({"t": 1}, acks=0)
    fut = p.send("t", b"v")
    clock.advance(1)
    run(p)
    assert fut.result(0).offset == -1 and net.pending() == []


def test_flush_marks_batches_ready_before_linger():
    p, net, clock = make_producer({"t": 1}, acks=1, **{"linger.ms": 10000})
    p.send("t", b"v")
    p._acc.begin_flush()
    run(p)
    assert len(net.pending()) == 1
    p._acc.end_flush()


def test_close_with_timeout_fails_pending_records():
    p, net, clock = make_producer({"t": 1}, acks=1)
    fut = p.send("t", b"v")
    p._sender.force()
    p._sender.abort_all(KafkaConnectionError("closed before acknowledged"))
    with pytest.raises(KafkaConnectionError):
        fut.result(0)


def test_unsupported_produce_version_fails_with_advice():
    p, net, clock = make_producer({"t": 1}, acks=1)
    net.versions["Produce"] = 2
    fut = p.send("t", b"v")
    clock.advance(1)
    run(p)
    with pytest.raises(Exception, match="Produce v3"):
        fut.result(0)


def test_batch_created_while_the_sender_scans_wakes_it():
    # The sender thread scans the accumulator, then sleeps for as long as the scan said. A
    # batch another thread creates in between must wake it, or it waits out the long sleep.
    p, net, clock = make_producer({"t": 1}, acks=1, **{"linger.ms": 0})
    p._sender.run_once()                      # idle: nothing queued, no request in flight
    real_ready = p._acc.ready
    futs = []

    def ready_then_send(*args):
        check = real_ready(*args)             # the scan sees an empty accumulator ...
        futs.append(p.send("t", b"late"))     # ... and then a batch arrives
        return check
    p._acc.ready = ready_then_send
    before = net.wakeups
    p._sender.run_once()
    p._acc.ready = real_ready
    assert net.wakeups == before + 1
    p._sender.run_once()                      # the woken sender sends it
    [req] = net.pending()
    net.answer_produce(req, offsets={("t", 0): 5})
    assert futs[0].result(0).offset == 5


def _coordinator_found_on_an_unknown_node():
    """A transactional producer whose coordinator lookup names node 5, which the metadata
    does not list yet (a new producer knows only its bootstrap connection)."""
    p, net, clock = make_producer({"t": 1}, **{"transactional.id": "tx"})
    net.versions.update({"FindCoordinator": 3})
    p._txn.init_transactions()
    run(p, 1)
    [find] = net.pending("FindCoordinator")
    net.respond(find, {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
                       "node_id": 5, "host": "fake", "port": 5})
    run(p, 2)
    assert not net.pending("InitProducerId") and not net.pending("FindCoordinator")
    return p, net, clock


def _metadata_with(net, clock, nodes):
    net.metadata.update({"brokers": [{"node_id": n, "host": "fake", "port": n} for n in nodes],
                         "topics": []}, clock())


def test_init_goes_on_as_soon_as_the_metadata_knows_the_coordinator():
    p, net, clock = _coordinator_found_on_an_unknown_node()
    _metadata_with(net, clock, [1, 5])       # no time passes: no retry.backoff.ms wait
    run(p, 1)
    [init] = net.pending("InitProducerId")
    assert init.node_id == 5 and init.request_body["transactional_id"] == "tx"


def test_the_coordinator_is_looked_up_again_when_the_metadata_lacks_it():
    p, net, clock = _coordinator_found_on_an_unknown_node()
    _metadata_with(net, clock, [1])           # an update without node 5
    run(p, 1)
    assert net.pending("FindCoordinator") and not net.pending("InitProducerId")
    p2, net2, clock2 = _coordinator_found_on_an_unknown_node()
    clock2.advance(p2._sender.backoff)        # no update at all: again after the backoff
    run(p2, 1)
    assert net2.pending("FindCoordinator") and not net2.pending("InitProducerId")
