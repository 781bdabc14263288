"""The bulk path's pieces: vectorised murmur2 (bit-exact with partitioners.murmur2) and the
chunking that keeps every bulk batch under its size limit."""
from __future__ import annotations

import random

from hypothesis import given, settings, strategies as st

from gregor.client.producer.bulk import _chunks, _record_sizes
from gregor.client.producer.bulk_hash import murmur2_many, murmur2_partitions
from gregor.client.producer.partitioners import murmur2, to_positive


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(min_size=0, max_size=40), min_size=1, max_size=50),
       st.integers(1, 50))
def test_vectorised_murmur2_matches_the_reference(keys, n):
    assert [h & 0xFFFFFFFF for h in murmur2_many(keys).tolist()] == \
        [murmur2(k) & 0xFFFFFFFF for k in keys]
    assert murmur2_partitions(keys, n).tolist() == [to_positive(murmur2(k)) % n for k in keys]


def test_chunks_cover_everything_in_order_within_the_limit():
    rnd = random.Random(1)
    values = [rnd.randbytes(rnd.randrange(0, 3000)) for _ in range(2000)]
    values[5] = None
    keys = [b"k%d" % i for i in range(2000)]
    sizes = _record_sizes(values, keys, None)
    for indices in (None, list(range(0, 2000, 3))):
        chunks = list(_chunks(sizes, indices, 50_000))
        count = 2000 if indices is None else len(indices)
        assert chunks[0][0] == 0 and chunks[-1][1] == count
        assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))
        assert all(size <= 50_000 for _, _, size in chunks)


def test_a_record_larger_than_the_limit_goes_alone():
    sizes = _record_sizes([b"x" * 10, b"y" * 5000, b"z"], None, None)
    assert [(lo, hi) for lo, hi, _ in _chunks(sizes, None, 1000)] == [(0, 1), (1, 2), (2, 3)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(min_size=0, max_size=40), min_size=1, max_size=50),
       st.integers(1, 50), st.integers(0, 3))
def test_compiled_murmur2_on_arrow_matches_the_reference(keys, n, cut):
    import pyarrow as pa
    from gregor.client.producer.bulk_hash import murmur2_partitions_arrow
    arr = pa.array([b"x"] * cut + keys, pa.binary()).slice(cut)
    assert murmur2_partitions_arrow(arr, n).tolist() == \
        [to_positive(murmur2(k)) % n for k in keys]


def test_lists_take_the_arrow_path_exactly_when_they_hold_only_bytes():
    from gregor.client.producer.bulk import _list_to_arrow
    items = [b"a", None, b"", b"ccc" * 100]
    arr = _list_to_arrow(items)
    assert arr.to_pylist() == items and arr.null_count == 1
    assert _list_to_arrow(["text", b"x"]) is None
    assert _list_to_arrow([b"x", "text"]) is None
    assert _list_to_arrow([None, None]).to_pylist() == [None, None]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 70000), min_size=1, max_size=300))
def test_grouping_by_partition_keeps_input_order(parts):
    import numpy as np
    from gregor.client.producer.bulk import group_by_partition
    groups = group_by_partition(np.array(parts, dtype=np.int64))
    assert sorted(groups) == sorted(set(parts))
    for p, idx in groups.items():
        assert idx.tolist() == [i for i, q in enumerate(parts) if q == p]


def test_all_null_keys_are_sticky_per_chunk_like_no_keys():
    """A key list of only None partitions like keys=None: each bulk chunk to the sticky
    partition, which moves on at chunk boundaries (it used to ask the partitioner record by
    record, which never switches inside one call: every chunk on one partition)."""
    from tests.client.producer.fakes import make_producer
    from tests.client.producer.test_staging import drain_all
    p, net, clock = make_producer({"t": 6}, acks=1, **{"max.request.size": 1 << 16,
                                                       "buffer.memory": 1 << 28})
    p.partitions_for("t")
    n = 100_000                      # ~20 chunks of 64 KiB
    values = [b"%d" % i for i in range(n)]
    p.send_batch("t", values, keys=[None] * n)
    log = drain_all(p, net, clock)
    assert sorted(v for vals in log.values() for v in vals) == sorted(values)
    assert len([vals for vals in log.values() if vals]) > 1


def _drain_batches(p, net, clock):
    """[(wire bytes, [values])] of every batch the producer sends, in order."""
    from tests.client.producer.test_staging import drain_all
    sent = []
    drain_all(p, net, clock, batches=sent)
    return sent


def test_compressed_bulk_batches_are_sized_by_their_compressed_size():
    """Like Kafka's producer, a compressed batch is filled by its estimated size on the
    wire: records that compress ~10:1 go 8 MiB to a batch after the first few, and no batch
    on the wire is larger than max.request.size allows."""
    import pyarrow as pa
    from gregor.client.producer import bulk
    from tests.client.producer.fakes import make_producer
    p, net, clock = make_producer({"t": 1}, acks=1, **{"compression.type": "lz4",
                                                       "buffer.memory": 1 << 28})
    p.partitions_for("t")
    values = [b"%020d" % i + b"x" * 80 for i in range(300_000)]        # 30 MiB of records
    p.send_batch("t", pa.array(values, pa.binary()))
    sent = _drain_batches(p, net, clock)
    assert [v for _, vals in sent for v in vals] == values
    wire_limit = (1 << 20) - 512
    assert max(size for size, _ in sent) <= wire_limit
    biggest = max(sum(len(v) for v in vals) for _, vals in sent)
    assert biggest > 4 * bulk.MAX_BULK_BATCH, f"largest batch held {biggest} B of values"
    assert len(sent) < 15, f"{len(sent)} batches for 30 MiB of records (1 MiB each: 30)"
    assert p._bulk_ratios["t"] < 0.2


def test_a_batch_that_compresses_worse_than_estimated_is_split_before_it_is_sent():
    import os
    import pyarrow as pa
    from tests.client.producer.fakes import make_producer
    p, net, clock = make_producer({"t": 1}, acks=1, **{"compression.type": "lz4",
                                                       "buffer.memory": 1 << 28})
    p.partitions_for("t")
    easy = [b"%020d" % i + b"x" * 80 for i in range(100_000)]
    p.send_batch("t", pa.array(easy, pa.binary()))
    assert p._bulk_ratios["t"] < 0.2                  # the next batch is sized for ~10:1
    hard = [os.urandom(100) for _ in range(100_000)]  # does not compress at all
    result = p.send_batch("t", pa.array(hard, pa.binary()))
    assert p._bulk_ratios["t"] > 0.9
    sent = _drain_batches(p, net, clock)
    assert [v for _, vals in sent for v in vals] == easy + hard
    assert max(size for size, _ in sent) <= (1 << 20) - 512
    assert sum(m.record_count for m in result.result(0)) == len(hard)
    assert p._pool.available == p._pool.total        # the discarded encodings gave it back
