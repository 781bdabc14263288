"""BatchBuilder and build_batch_bulk: same bytes as encode_batch, limits, the vector encoder."""
from __future__ import annotations

import os
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gregor.protocol.records.batch import decode_batches, encode_batch, validate_batch
from gregor.protocol.records.builder import BatchBuilder, build_batch_bulk
from gregor.protocol.records.encoding import (_encode_records_small, encode_records,
                                              encode_records_loop, encode_records_uniform)
from gregor.protocol.records.legacy import decode_message_set

kdefault = pytest.importorskip("kafka.record.default_records",
                               reason="kafka-python is a test dependency")


def test_builder_matches_encode_batch_and_kafka_python():
    recs = [(1000 + i, b"key-%d" % i, b"v" * (i % 50), None) for i in range(200)]
    b = BatchBuilder(max_bytes=1 << 20)
    for r in recs:
        assert b.append(*r)
    assert b.record_count == 200
    ours = b.build(base_offset=3, producer_id=9, producer_epoch=1, base_sequence=5)
    assert ours == encode_batch(recs, base_offset=3, producer_id=9, producer_epoch=1,
                                base_sequence=5)
    kb = kdefault.DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                            producer_id=9, producer_epoch=1, base_sequence=5,
                                            batch_size=1 << 20)
    for i, (ts, k, v, _) in enumerate(recs):
        kb.append(i, timestamp=ts, key=k, value=v, headers=[])
    theirs = bytearray(kb.build())
    theirs[0:8] = (3).to_bytes(8, "big")      # base offset is outside the CRC
    theirs[12:16] = (-1).to_bytes(4, "big", signed=True)   # they write leader epoch 0
    # partition leader epoch is outside the CRC too; everything else is byte-identical
    assert bytes(theirs)[16:] == ours[16:]


def test_full_batch_refuses_and_first_record_always_fits():
    b = BatchBuilder(max_bytes=1000)
    assert b.append(1, None, b"x" * 5000)          # bigger than max_bytes, but first
    assert not b.append(1, None, b"y")
    assert b.record_count == 1
    b = BatchBuilder(max_bytes=1000)
    n = 0
    while b.append(1, b"k", b"v" * 100):
        n += 1
    built = b.build()
    assert n == b.record_count and len(built) <= 1000 and b.size_estimate >= len(built)
    assert b.is_full() or b.size_estimate + 113 > 1000


def test_headers_from_the_middle_and_none_timestamps():
    b = BatchBuilder()
    b.append(5, b"a", b"1")
    b.append(None, b"b", b"2", [("trace", b"t1")])
    b.append(7, None, None)
    (batch,) = decode_batches(b.build())
    assert [r.headers for r in batch] == [[], [("trace", b"t1")], []]
    assert batch.records[1].timestamp > 1_600_000_000_000
    assert (batch.records[2].key, batch.records[2].value) == (None, None)


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_builder_compression(codec):
    b = BatchBuilder(compression=codec, max_bytes=1 << 20)
    for i in range(100):
        b.append(i, None, b"same value " * 5)
    data = b.build()
    (batch,) = decode_batches(data)
    assert batch.compression == codec and len(batch) == 100


@pytest.mark.parametrize("magic", [0, 1])
def test_builder_legacy_magic(magic):
    b = BatchBuilder(magic=magic, compression=1)
    for i in range(10):
        b.append(1000 + i, b"k", b"v%d" % i)
    msgs = decode_message_set(b.build(base_offset=0))
    assert [m.value for m in msgs] == [b"v%d" % i for i in range(10)]
    assert [m.timestamp for m in msgs] == ([1000 + i for i in range(10)] if magic else [-1] * 10)
    with pytest.raises(ValueError, match="headers"):
        b.append(1, b"k", b"v", [("h", b"x")])


def test_empty_builder_cannot_build():
    with pytest.raises(ValueError):
        BatchBuilder().build()


# --- bulk ---------------------------------------------------------------------------------------

def test_bulk_matches_encode_batch_for_every_input_shape():
    n = 500
    rnd = random.Random(2)
    keys = [None if i % 7 == 0 else os.urandom(rnd.randint(0, 20)) for i in range(n)]
    values = [None if i % 11 == 0 else os.urandom(rnd.randint(0, 200)) for i in range(n)]
    ts = [1_700_000_000_000 + rnd.randint(-100_000, 100_000) for _ in range(n)]
    expected = encode_batch(list(zip(ts, keys, values)), compression=3)
    assert build_batch_bulk(keys, values, ts, compression=3) == expected
    assert build_batch_bulk(keys, values, np.array(ts, dtype=np.int64), compression="lz4") == \
        expected
    same_ts = encode_batch([(42, k, v, None) for k, v in zip(keys, values)])
    assert build_batch_bulk(keys, values, 42) == same_ts
    no_keys = encode_batch([(42, None, v, None) for v in values])
    assert build_batch_bulk(None, values, 42) == no_keys
    hdrs = [[("i", b"%d" % i)] if i % 3 == 0 else None for i in range(n)]
    with_headers = encode_batch([(42, k, v, h) for k, v, h in zip(keys, values, hdrs)])
    assert build_batch_bulk(keys, values, 42, headers=hdrs) == with_headers


def test_bulk_big_values_and_far_timestamps_leave_the_varint_table():
    n = 100
    values = [b"v" * (20_000 + i) for i in range(n)]
    ts = [i * 10_000_000 for i in range(n)]        # deltas far beyond the table
    data = build_batch_bulk(None, values, ts)
    (batch,) = decode_batches(data)
    assert [len(r.value) for r in batch] == [20_000 + i for i in range(n)]
    assert [r.timestamp for r in batch] == ts
    validate_batch(data, from_client=False)


def test_bulk_none_timestamps_mean_now():
    (batch,) = decode_batches(build_batch_bulk(None, [b"a", b"b"], [None, 5]))
    assert batch.records[0].timestamp > 1_600_000_000_000 and batch.records[1].timestamp == 5


def test_bulk_input_errors():
    with pytest.raises(ValueError):
        build_batch_bulk([], [])
    with pytest.raises(ValueError):
        build_batch_bulk([b"a"], [b"a", b"b"])
    with pytest.raises(ValueError):
        build_batch_bulk(None, [b"a", b"b"], [1])


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 1500), st.integers(0, 2**31), st.data())
def test_small_and_uniform_encoders_equal_the_loop(n, seed, data):
    rnd = random.Random(seed)
    key_len = data.draw(st.sampled_from([None, 0, 10, "mixed"]))
    keys = [None if key_len is None or (key_len == "mixed" and rnd.random() < 0.3)
            else bytes(rnd.randint(0, 30) if key_len == "mixed" else key_len) for _ in range(n)]
    value_len = data.draw(st.sampled_from([0, 100, 17000, "mixed"]))
    values = [None if value_len == "mixed" and rnd.random() < 0.05
              else bytes(rnd.choice([0, 5, 100, 9000, 17000]) if value_len == "mixed"
                         else value_len) for _ in range(n)]
    spread = data.draw(st.sampled_from([0, 10, 10_000, 10**9]))
    ts = [rnd.randint(-spread, spread) for _ in range(n)]
    base = ts[0]
    expected = encode_records_loop(ts, keys, values, None, base)
    assert bytes(encode_records(ts, keys, values, None, base)) == expected
    try:
        assert _encode_records_small(ts, keys, values, base) == expected
    except IndexError:
        assert value_len in (17000, "mixed")     # past the varint table: the loop takes over
    uniform = encode_records_uniform(ts, keys, values, base)
    if uniform is not None:
        assert len({len(v) for v in values}) == 1 and None not in values
        assert len({-1 if k is None else len(k) for k in keys}) == 1
        assert bytes(uniform) == expected
    assert bytes(encode_records(7, keys, values, None, 7)) == \
        encode_records_loop([7] * n, keys, values, None, 7)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 1200), st.sampled_from([None, 0, 10, 200]),
       st.sampled_from([0, 1, 100, 9000]),
       st.sampled_from(["same", "rising", "falling", "scattered"]))
def test_every_encoder_choice_equals_the_loop(n, key_len, value_len, ts_shape):
    keys = [None if key_len is None else bytes([n % 256]) * key_len for _ in range(n)]
    values = [bytes([i % 256]) * value_len for i in range(n)]
    rnd = random.Random(n)
    ts = {"same": [5] * n, "rising": [1000 + i * 7 for i in range(n)],
          "falling": [10**6 - i * 3 for i in range(n)],
          "scattered": [rnd.randint(0, 10**7) for _ in range(n)]}[ts_shape]
    expected = encode_records_loop(ts, keys, values, None, ts[0])
    assert bytes(encode_records(ts, keys, values, None, ts[0])) == expected
    uniform = encode_records_uniform(ts, keys, values, ts[0])
    assert uniform is None or bytes(uniform) == expected


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_uniform_path_with_compression(codec):
    n = 3000                        # above UNIFORM_MIN_RECORDS, single key and value lengths
    keys = [b"%09d" % i for i in range(n)]
    values = [b"value %09d " % i * 5 for i in range(n)]
    ts = [1000 + i // 7 for i in range(n)]
    data = build_batch_bulk(keys, values, ts, codec)
    assert data == encode_batch([(t, k, v, None) for t, k, v in zip(ts, keys, values)],
                                compression=codec)
    (batch,) = decode_batches(data)
    assert [r.value for r in batch] == values and batch.compression == codec


def test_uniform_path_from_several_threads_at_once():
    from concurrent.futures import ThreadPoolExecutor

    def build(seed):
        n = 2000 + seed * 100       # different sizes, so scratch buffers get resized
        values = [bytes([seed]) * (50 + seed) for _ in range(n)]
        out = []
        for _ in range(5):
            data = build_batch_bulk(None, values, [seed] * n)
            out.append([r.value for r in decode_batches(data)[0]] == values)
        return all(out)

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(build, range(8)))


@pytest.mark.parametrize("null_keys", [False, True])
def test_uniform_batch_written_in_place_equals_the_general_path(null_keys):
    from gregor.protocol.records.encoding import UNIFORM_MIN_RECORDS, assemble_batch
    n = UNIFORM_MIN_RECORDS + 5
    keys = None if null_keys else [b"k%07d" % i for i in range(n)]
    values = [b"v%011d" % i for i in range(n)]
    ts = [1_700_000_000_000 + i * 3 for i in range(n)]
    fields = dict(producer_id=9, producer_epoch=2, base_sequence=40, transactional=True,
                  partition_leader_epoch=5, base_offset=7)
    got = build_batch_bulk(keys, values, ts, mutable=True, **fields)
    assert type(got) is bytearray
    section = encode_records_loop(ts, keys or [None] * n, values, None, ts[0])
    assert got == assemble_batch(section, n, ts[0], ts[-1], **fields)
