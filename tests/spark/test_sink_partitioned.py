"""The sink's keyed fast path: rows sorted into partitions as they arrive (gregor/spark/
partitioned.py), checked against kafka-python's murmur2 (Java's default partitioner, written
independently), and the sink's RecordWriter end to end against a broker."""
from __future__ import annotations

import random

import pyarrow as pa
import pytest
from kafka.partitioner.default import murmur2

from gregor.spark import client as sink_client
from gregor.spark import partitioned
from gregor.spark.partitioned import PartitionedRows


def java_partition(key: bytes, n: int) -> int:
    return (murmur2(key) & 0x7FFFFFFF) % n


def expected_by_partition(rows, n):
    """{partition: [(key, value) in arrival order]} as Java's producer would place them."""
    out: dict[int, list] = {}
    for k, v in rows:
        out.setdefault(java_partition(k, n), []).append((k, v))
    return out


def held(rows: PartitionedRows) -> dict:
    return {p: list(zip(keys.to_pylist(), values.to_pylist()))
            for p, keys, values in rows.partitions()}


def test_rows_land_in_java_partitions_in_arrival_order_across_batches():
    rnd = random.Random(7)
    pr = PartitionedRows()
    sent = []
    for b in range(5):
        batch = [(b"k%d" % rnd.randrange(1000), bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 300))))
                 for _ in range(rnd.randrange(1, 400))]
        sent += batch
        assert pr.takes(pa.array([k for k, _ in batch]), pa.array([v for _, v in batch]))
        pr.add(pa.array([k for k, _ in batch], pa.binary()),
               pa.array([v for _, v in batch], pa.binary()), 5)
    assert pr.rows == len(sent)
    assert pr.nbytes == sum(len(k) + len(v) for k, v in sent)
    assert held(pr) == expected_by_partition(sent, 5)


def test_sliced_string_columns_and_empty_values():
    keys = pa.array(["a", "bb", "ccc", "dddd", "e", "ff"]).slice(1, 4)
    values = pa.array(["", "x", "yy", "", "zzz", "w"]).slice(1, 4)
    pr = PartitionedRows()
    pr.add(keys, values, 3)
    want = expected_by_partition([(k.encode(), v.encode()) for k, v in
                                  zip(keys.to_pylist(), values.to_pylist())], 3)
    got = {p: [(k.encode(), v.encode()) for k, v in items] for p, items in held(pr).items()}
    assert got == want
    assert all(pa.types.is_string(v.type) for _, _, v in pr.partitions())


def test_buffers_grow_and_are_reused_after_reset():
    pr = PartitionedRows()
    big = [(b"key-%d" % i, bytes([i % 251]) * 5000) for i in range(300)]   # past the first buffers
    pr.add(pa.array([k for k, _ in big]), pa.array([v for _, v in big]), 4)
    assert held(pr) == expected_by_partition(big, 4)
    buffers = {p: part.values.data for p, part in pr._parts.items()}
    pr.reset()
    assert pr.rows == 0 and list(pr.partitions()) == []
    small = [(b"key-%d" % i, b"v%d" % i) for i in range(50)]
    pr.add(pa.array([k for k, _ in small]), pa.array([v for _, v in small]), 4)
    assert held(pr) == expected_by_partition(small, 4)
    assert all(pr._parts[p].values.data is buf for p, buf in buffers.items() if p in pr._parts)


def test_takes_only_rows_without_nulls_of_one_kind():
    pr = PartitionedRows()
    assert not pr.takes(pa.array([b"a", None]), pa.array([b"x", b"y"]))
    assert not pr.takes(pa.array([b"a", b"b"]), pa.array([b"x", None]))       # tombstone
    assert not pr.takes(pa.array([b"a"], pa.large_binary()), pa.array([b"x"]))
    pr.add(pa.array([b"a"]), pa.array([b"x"]), 2)
    assert not pr.takes(pa.array(["a"]), pa.array([b"x"]))                    # type changed
    assert pr.takes(pa.array([b"b"]), pa.array([b"y"]))


def test_borrowed_buffers_are_not_shared_while_in_use():
    a = partitioned.borrow()
    b = partitioned.borrow()
    assert a is not b
    a.add(pa.array([b"k"]), pa.array([b"v"]), 1)
    partitioned.give_back(a)
    assert partitioned.borrow() is a and a.rows == 0


def _read_all(bootstrap, topic, nparts, count):
    from gregor.client.consumer import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"})
    c.assign([(topic, p, 0) for p in range(nparts)])
    out: dict[int, list] = {}
    got = 0
    for _ in range(200):
        for r in c.poll(1.0):
            out.setdefault(r.partition, []).append((r.key, r.value, r.headers or None))
            got += 1
        if got >= count:
            break
    c.close()
    return out


def test_record_writer_mixed_batches_keep_partitions_and_order(bootstrap, make_topic, monkeypatch):
    """Keyed batches (fast path) between batches the general path takes (a null key, headers):
    every record in its Java partition or, keyless, anywhere; each partition in DataFrame
    order; several coalesced rounds, so the reused buffers are refilled between sends."""
    monkeypatch.setattr(sink_client, "COALESCE_BYTES", 20_000)
    topic = make_topic(partitions=3)
    rnd = random.Random(3)
    batches, sent = [], []
    for b in range(12):
        n = rnd.randrange(50, 200)
        keys = [b"key-%d" % rnd.randrange(500) for _ in range(n)]
        values = [b"b%d-%d-" % (b, i) + bytes(rnd.randrange(256) for _ in range(rnd.randrange(60)))
                  for i in range(n)]
        cols = {"key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary())}
        if b == 4:
            keys[3] = None
            cols["key"] = pa.array(keys, pa.binary())
        if b == 8:
            cols["headers"] = pa.array([[{"key": "h", "value": b"1"}]] + [[]] * (n - 1),
                                       sink_client.HEADER_TYPE)
        batches.append(pa.RecordBatch.from_pydict(cols))
        sent += [(k, v, b == 8 and i == 0) for i, (k, v) in enumerate(zip(keys, values))]
    w = sink_client.RecordWriter({"bootstrap.servers": bootstrap}, topic)
    for batch in batches:
        w.write(batch)
    assert w.close() == len(sent)

    got = _read_all(bootstrap, topic, 3, len(sent))
    assert sum(map(len, got.values())) == len(sent)
    where = {}
    for p, records in got.items():
        for i, (k, v, h) in enumerate(records):
            where[v] = (p, i)
    for k, v, with_header in sent:
        p, _ = where[v]
        if k is not None:
            assert p == java_partition(k, 3), (k, v)
    for p, records in got.items():       # DataFrame order within each partition
        order = [sent_index for sent_index, (_, v, _) in enumerate(sent) if where[v][0] == p]
        assert [r[1] for r in records] == [sent[i][1] for i in order]
    headered = [r for records in got.values() for r in records if r[2]]
    assert len(headered) == 1 and headered[0][2] == [("h", b"1")]


@pytest.mark.parametrize("compression", ["none", "lz4"])
def test_record_writer_fast_path_round_trip(bootstrap, make_topic, compression):
    topic = make_topic(partitions=4)
    rows = [(b"user-%d" % (i % 97), b"%08d" % i + b"." * (i % 40)) for i in range(20_000)]
    w = sink_client.RecordWriter({"bootstrap.servers": bootstrap,
                                  "compression.type": compression}, topic)
    for lo in range(0, len(rows), 3000):
        part = rows[lo:lo + 3000]
        w.write(pa.RecordBatch.from_pydict({"key": pa.array([k for k, _ in part]),
                                            "value": pa.array([v for _, v in part])}))
    assert w.close() == len(rows)
    got = _read_all(bootstrap, topic, 4, len(rows))
    want = expected_by_partition(rows, 4)
    assert {p: [(k, v) for k, v, _ in records] for p, records in got.items()} == want
