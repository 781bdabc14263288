"""The compiled list encoder (_lists.pyx) writes the same bytes as the Python encoders it
shadows (which are cross-checked with kafka-python and librdkafka elsewhere), declines what
it does not take, and batches built through it decode back exactly."""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gregor.compiled import load
from gregor.protocol.records.batch import decode_batches
from gregor.protocol.records.builder import build_batch_bulk
from gregor.protocol.records.encoding import encode_records_loop

lists = load("gregor.protocol.records._lists")
compiled = pytest.mark.skipif(lists is None,
                              reason="GREGOR_PURE_PYTHON=1: the Python encoders are under test")
BASE = 1_700_000_000_000



def test_the_compiled_encoder_is_built_unless_told_not_to_use_it():
    """`make venv` compiles it; a broken build must fail here, not just run slower."""
    if os.environ.get("GREGOR_PURE_PYTHON"):
        assert lists is None
    else:
        assert lists is not None, "the compiled list encoder was not built"


maybe_bytes = st.one_of(st.none(), st.binary(max_size=200))
# Lengths that cross varint boundaries (63/64, 8191/8192 in zig-zag) matter most.
long_bytes = st.sampled_from([0, 63, 64, 65, 8191, 8192, 20000]).map(lambda n: b"x" * n)


@compiled
@settings(max_examples=300, deadline=None)
@given(st.data())
def test_same_bytes_as_the_python_encoder(data):
    n = data.draw(st.integers(1, 60))
    item = st.one_of(maybe_bytes, long_bytes)
    values = data.draw(st.lists(item, min_size=n, max_size=n))
    keys = data.draw(st.one_of(st.none(), st.lists(item, min_size=n, max_size=n)))
    base = data.draw(st.integers(0, 2**42))
    deltas = data.draw(st.lists(st.integers(-2**40, 2**40), min_size=n, max_size=n))
    ts = np.array([base + d for d in deltas], dtype=np.int64)
    want = encode_records_loop(ts.tolist(), keys or [None] * n, values, None, base)
    assert bytes(lists.encode_records_lists(ts, keys, values, base)) == bytes(want)
    # One timestamp for every record, and writing into a caller's buffer.
    want = encode_records_loop([base] * n, keys or [None] * n, values, None, base)
    got = lists.encode_records_lists(base, keys, values, base,
                                     lambda size: np.zeros(size, dtype=np.uint8))
    assert bytes(got) == bytes(want)


@compiled
def test_extreme_timestamp_deltas_and_many_records():
    n = 20000
    values = [b"v%d" % i for i in range(n)]
    ts = np.array([0, 2**62, -2**62] * (n // 3) + [5] * (n % 3), dtype=np.int64)
    want = encode_records_loop(ts.tolist(), [None] * n, values, None, 0)
    assert bytes(lists.encode_records_lists(ts, None, values, 0)) == bytes(want)


@compiled
@pytest.mark.parametrize("odd", [bytearray(b"x"), memoryview(b"x"), "x", 5])
def test_items_other_than_bytes_or_none_are_declined(odd):
    assert lists.encode_records_lists(BASE, None, [b"a", odd], BASE) is None
    assert lists.encode_records_lists(BASE, [b"k", odd], [b"a", b"b"], BASE) is None


@compiled
def test_mismatched_lengths_are_an_error():
    with pytest.raises(ValueError, match="keys"):
        lists.encode_records_lists(BASE, [b"k"], [b"a", b"b"], BASE)
    with pytest.raises(ValueError, match="timestamps"):
        lists.encode_records_lists(np.zeros(3, dtype=np.int64), None, [b"a", b"b"], BASE)


def test_batches_built_from_lists_decode_exactly():
    """Through build_batch_bulk (the compiled encoder when built, else the Python ones):
    uncompressed in place and compressed, mixed lengths and nulls."""
    n = 3000
    keys = [None if i % 7 == 0 else b"key-%d" % (i % 50) for i in range(n)]
    values = [None if i % 11 == 0 else b"v" * (i % 300) for i in range(n)]
    ts = np.arange(BASE, BASE + n, dtype=np.int64)
    for codec in ("none", "lz4", "zstd"):
        data = build_batch_bulk(keys, values, ts, codec, producer_id=7, producer_epoch=1,
                                base_sequence=40)
        (batch,) = decode_batches(data)
        assert batch.header.producer_id == 7 and batch.header.base_sequence == 40
        assert [(r.key, r.value, r.timestamp) for r in batch.records] == \
            list(zip(keys, values, ts.tolist()))
