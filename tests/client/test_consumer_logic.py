"""Consumer logic against an in-memory fake network: positions, resets, pause, seek, errors."""
from __future__ import annotations

import pytest

from gregor.client.consumer import Consumer, OffsetAndTimestamp
from gregor.client.errors import ClientError, ConfigError
from gregor.protocol.errors import OffsetOutOfRangeError, TopicAuthorizationFailedError

from tests.client.fake_network import NOT_LEADER, FakeNetwork


def make(parts=None, **cfg):
    net = FakeNetwork(parts or {"t": 2})
    conf = {"bootstrap.servers": "fake:1", "fetch.max.wait.ms": 10}
    conf.update(cfg)
    return Consumer(conf, network=net), net


def drain(c, rounds=20):
    out = []
    for _ in range(rounds):
        out += c.poll(0.002)
    return out


def test_reads_every_partition_in_order_from_earliest():
    c, net = make(**{"auto.offset.reset": "earliest"})
    net.append("t", 0, [b"a", b"b", b"c"], keys=[b"1", None, b"3"])
    net.append("t", 1, [b"x"])
    net.append("t", 0, [b"d"])
    c.assign([("t", 0), ("t", 1)])
    got = drain(c)
    by_part = {p: [(r.offset, r.value) for r in got if r.partition == p] for p in (0, 1)}
    assert by_part == {0: [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d")], 1: [(0, b"x")]}
    assert [r.key for r in got if r.partition == 0][:3] == [b"1", None, b"3"]
    assert c.position("t", 0) == 4 and c.position("t", 1) == 1
    assert c.highwater("t", 0) == 4 and c.lag("t", 0) == 0


def test_several_partitions_share_one_fetch_request():
    c, net = make()
    c.assign([("t", 0, 0), ("t", 1, 0)])
    c.poll(0.01)
    fetches = [r for r in net.sent if r.api_name == "Fetch"]
    assert fetches and len(fetches[0].request_body["topics"][0]["partitions"]) == 2
    body = fetches[0].request_body
    assert body["max_wait_ms"] == 10 and body["min_bytes"] == 1
    assert body["isolation_level"] == 0


def test_latest_starts_at_the_end_and_sees_new_records():
    c, net = make()  # auto.offset.reset defaults to latest, like Java
    net.append("t", 0, [b"old"])
    c.assign([("t", 0)])
    assert drain(c, 3) == []
    assert c.position("t", 0) == 1
    net.append("t", 0, [b"new"])
    assert [r.value for r in drain(c, 3)] == [b"new"]


def test_explicit_offsets_and_earliest_marker():
    c, net = make()
    net.append("t", 0, [b"a", b"b", b"c"])
    net.append("t", 1, [b"x", b"y"])
    c.assign([("t", 0, 2), ("t", 1, -2)])
    got = drain(c)
    assert sorted((r.partition, r.offset) for r in got) == [(0, 2), (1, 0), (1, 1)]


def test_max_poll_records_limits_each_poll():
    c, net = make(**{"max.poll.records": 2})
    net.append("t", 0, [b"%d" % i for i in range(5)])
    c.assign([("t", 0, 0)])
    sizes = []
    for _ in range(10):
        got = c.poll(0.01)
        if got:
            sizes.append([r.offset for r in got])
    assert sizes == [[0, 1], [2, 3], [4]]


@pytest.mark.parametrize("policy,expected", [("earliest", [b"a", b"b"]), ("latest", [])])
def test_out_of_range_resets_by_policy(policy, expected):
    c, net = make(**{"auto.offset.reset": policy})
    net.append("t", 0, [b"a", b"b"])
    c.assign([("t", 0, 50)])
    assert [r.value for r in drain(c)] == expected
    assert c.position("t", 0) == (0 + len(expected) if policy == "earliest" else 2)


def test_out_of_range_with_policy_none_raises_on_poll():
    c, net = make(**{"auto.offset.reset": "none"})
    net.append("t", 0, [b"a"])
    c.assign([("t", 0, 9)])
    with pytest.raises(OffsetOutOfRangeError, match="t-0"):
        drain(c)
    with pytest.raises(ConfigError, match="auto.offset.reset is none"):
        c.assign([("t", 0)])


def test_pause_holds_records_until_resume():
    c, net = make()
    net.append("t", 0, [b"a"])
    net.append("t", 1, [b"b"])
    c.assign([("t", 0, 0), ("t", 1, 0)])
    c.pause(("t", 0))
    assert c.paused() == [("t", 0)]
    assert [r.value for r in drain(c)] == [b"b"]
    c.resume(("t", 0))
    assert [r.value for r in drain(c)] == [b"a"]


def test_seek_discards_buffered_and_in_flight_data():
    c, net = make(**{"max.poll.records": 1})
    net.append("t", 0, [b"a", b"b", b"c", b"d"])
    c.assign([("t", 0, 0)])
    first = c.poll(0.01)
    assert [r.offset for r in first] == [0]
    c.seek("t", 0, 3)
    assert [r.offset for r in drain(c)] == [3]
    c.seek_to_beginning()
    assert [r.offset for r in drain(c)] == [0, 1, 2, 3]
    c.seek_to_end([("t", 0)])
    assert c.position("t", 0) == 4


def test_not_leader_refreshes_metadata_and_retries():
    c, net = make()
    net.append("t", 0, [b"a"])
    net.inject("t", 0, NOT_LEADER, NOT_LEADER)
    c.assign([("t", 0, 0)])
    assert [r.value for r in drain(c)] == [b"a"]
    assert sum(r.api_name == "Fetch" for r in net.sent) >= 3


def test_fatal_partition_error_is_raised_with_context():
    c, net = make()
    net.inject("t", 1, 29)  # TOPIC_AUTHORIZATION_FAILED
    c.assign([("t", 1, 0)])
    with pytest.raises(TopicAuthorizationFailedError, match="t-1 at offset 0"):
        drain(c)


def test_offset_lookups():
    c, net = make()
    net.append("t", 0, [b"a", b"b", b"c"], timestamps=[100, 200, 300])
    assert c.beginning_offsets([("t", 0)]) == {("t", 0): 0}
    assert c.end_offsets([("t", 0), ("t", 1)]) == {("t", 0): 3, ("t", 1): 0}
    got = c.offsets_for_times({("t", 0): 150, ("t", 1): 0})
    assert got[("t", 0)] == OffsetAndTimestamp(1, 200, 0)
    assert got[("t", 1)] is None
    with pytest.raises(ValueError):
        c.offsets_for_times({("t", 0): -5})


def test_deserializers_apply_and_name_themselves_on_failure():
    c, net = make(**{"key.deserializer": bytes.decode,
                     "value.deserializer": lambda b: int(b)})
    net.append("t", 0, [b"1", b"2"], keys=[b"a", None])
    c.assign([("t", 0, 0)])
    got = drain(c)
    assert [(r.key, r.value) for r in got] == [("a", 1), (None, 2)]
    net.append("t", 0, [b"not a number"])
    with pytest.raises(ClientError, match="value.deserializer failed on t-0 offset 2"):
        drain(c)


def test_poll_batches_returns_columns_and_advances():
    c, net = make()
    net.append("t", 0, [b"a", b"b"])
    net.append("t", 1, [b"c"])
    c.assign([("t", 0, 0), ("t", 1, 0)])
    batches = []
    for _ in range(10):
        batches += c.poll_batches(0.002)
    assert sorted((b.partition, b.values) for b in batches) == [(0, [b"a", b"b"]), (1, [b"c"])]
    assert c.position("t", 0) == 2 and c.position("t", 1) == 1


def test_misuse_is_reported_clearly():
    c, net = make()
    with pytest.raises(ClientError, match="group.id"):   # no group: subscribe cannot work
        c.subscribe(["t"])
    with pytest.raises(ClientError, match="not assigned"):
        c.seek("t", 0, 1)
    with pytest.raises(ValueError, match="-2"):
        c.assign([("t", 0, -7)])
    c.close()
    assert net.closed
    with pytest.raises(ClientError, match="closed"):
        c.poll(0)


def test_zero_timeout_polls_make_progress_without_blocking():
    c, net = make(**{"auto.offset.reset": "earliest"})
    net.append("t", 0, [b"a", b"b"])
    c.assign([("t", 0)])
    got = []
    for _ in range(10):  # reset (ListOffsets), then fetch, then records: a few rounds
        got += c.poll(0)
    assert [r.value for r in got] == [b"a", b"b"]
    kinds = [r.api_name for r in net.sent]
    assert kinds[0] == "ListOffsets" and "Fetch" in kinds


def test_seek_during_a_pending_reset_wins():
    c, net = make(**{"auto.offset.reset": "latest"})
    net.append("t", 0, [b"a", b"b", b"c"])
    c.assign([("t", 0)])
    c._send_resets()           # the latest-offset lookup is now in flight
    c.seek("t", 0, 1)          # ... and the user seeks before it answers
    assert [r.offset for r in drain(c)] == [1, 2]


def test_marker_only_fetch_moves_the_position_and_shows_in_poll_batches():
    from gregor.protocol.records.batch import encode_control_batch
    c, net = make()
    net.append("t", 0, [b"a"])
    net.logs[("t", 0)].append(encode_control_batch(True, producer_id=3, producer_epoch=0,
                                                   base_offset=1))
    c.assign([("t", 0, 1)])
    chunks = []
    for _ in range(10):
        chunks += c.poll_batches(0.002)
    assert chunks and all(len(ch) == 0 for ch in chunks)
    assert chunks[0].next_offset == 2 and c.position("t", 0) == 2
    c.seek("t", 0, 1)
    assert c.poll(0.05) == []          # poll() waits out its timeout instead of returning early
    assert c.position("t", 0) == 2


def test_poll_batches_arrow_returns_arrow_chunks_and_advances():
    from gregor.client.consumer.arrow_records import ArrowRecords
    from gregor.protocol.records.batch import encode_control_batch
    c, net = make()
    net.append("t", 0, [b"v%d" % i for i in range(50)], keys=[None] * 50)
    net.logs[("t", 0)].append(encode_control_batch(True, producer_id=3, producer_epoch=0,
                                                   base_offset=50))
    net.append("t", 1, [b"c"])
    c.assign([("t", 0, 10), ("t", 1, 0)])
    chunks = []
    for _ in range(10):
        chunks += c.poll_batches(0.002, arrow=True)
    assert chunks and all(isinstance(ch, ArrowRecords) for ch in chunks)
    values = {p: [v for ch in chunks if ch.partition == p for v in ch.values.to_pylist()]
              for p in (0, 1)}
    assert values == {0: [b"v%d" % i for i in range(10, 50)], 1: [b"c"]}
    assert c.position("t", 0) == 51 and c.position("t", 1) == 1
    # Arrow chunks still buffered come out as records from poll() (and back as lists).
    net.append("t", 0, [b"x", b"y", b"z"])
    first = []
    for _ in range(10):
        first += c.poll_batches(0.002, max_records=1, arrow=True)
        if first:
            break
    assert [ch.values.to_pylist() for ch in first] == [[b"x"]]
    got = drain(c)
    assert [(r.offset, r.value) for r in got] == [(52, b"y"), (53, b"z")]


def test_asyncio_poll_batches_passes_arrow_through():
    import asyncio
    from gregor.client.consumer import AsyncioConsumer
    from gregor.client.consumer.arrow_records import ArrowRecords
    net = FakeNetwork({"t": 1})
    net.append("t", 0, [b"a", b"b"])

    async def main():
        async with AsyncioConsumer({"bootstrap.servers": "fake:1", "fetch.max.wait.ms": 10},
                                   network=net) as c:
            await c.assign([("t", 0, 0)])
            chunks = []
            for _ in range(20):
                chunks += await c.poll_batches(0.002, arrow=True)
                if sum(map(len, chunks)):
                    return chunks

    chunks = asyncio.run(main())
    assert all(isinstance(ch, ArrowRecords) for ch in chunks)
    assert [v for ch in chunks for v in ch.values.to_pylist()] == [b"a", b"b"]
