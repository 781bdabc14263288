"""The compiled Arrow decoder (_arrow_decode.pyx) against the numpy one it shadows, on the
same fetched bytes: same offsets, timestamps, keys (nulls included) and values, for every
codec and fetch offset; declines what it does not handle (headers) to the careful path."""
from __future__ import annotations

import os

import pytest
from hypothesis import given, settings, strategies as st

from gregor.client.consumer import arrow_records
from gregor.client.consumer.arrow_records import decode_partition_arrow
from gregor.compiled import load
from gregor.protocol import compression as C
from gregor.protocol.records.batch import encode_batch

compiled = load("gregor.client.consumer._arrow_decode")
needs_compiled = pytest.mark.skipif(compiled is None,
                                    reason="GREGOR_PURE_PYTHON=1: the numpy decoder is under test")
T0 = 1_700_000_000_000


def test_the_compiled_decoder_is_built_unless_told_not_to_use_it():
    """`make venv` compiles it; a broken build must fail here, not just run slower."""
    if os.environ.get("GREGOR_PURE_PYTHON"):
        assert compiled is None
    else:
        assert compiled is not None, "the compiled Arrow decoder was not built"


def both(data, fetch_offset, monkeypatch):
    fast = decode_partition_arrow(data, "t", 0, fetch_offset)
    with monkeypatch.context() as m:
        m.setattr(arrow_records, "_compiled", None)
        slow = decode_partition_arrow(data, "t", 0, fetch_offset)
    return fast, slow


def same(fast, slow):
    for name in ("offsets", "timestamps", "timestamp_types", "keys", "values", "leader_epochs",
                 "headers"):
        assert getattr(fast, name).equals(getattr(slow, name)), name
    assert fast.next_offset == slow.next_offset


records = st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=40)),
                             st.one_of(st.none(), st.binary(max_size=300)),
                             st.integers(0, 10**7)), min_size=1, max_size=120)


@needs_compiled
@settings(max_examples=60, deadline=None)
@given(st.lists(records, min_size=1, max_size=4), st.sampled_from([C.NONE, C.LZ4, C.ZSTD]),
       st.integers(0, 30))
def test_same_arrays_as_the_numpy_decoder(batches, codec, skip):
    mp = pytest.MonkeyPatch()   # hypothesis runs many examples per test: not the fixture
    try:
        data, base = b"", 0
        for recs in batches:
            data += encode_batch([(T0 + ts, k, v, None) for k, v, ts in recs], base_offset=base,
                                 compression=codec)
            base += len(recs)
        fetch_offset = min(skip, base - 1)
        fast, slow = both(data, fetch_offset, mp)
        same(fast, slow)
    finally:
        mp.undo()


@needs_compiled
def test_it_declines_records_with_headers(monkeypatch):
    recs = [(T0 + i, b"k", b"v%d" % i, [("h", b"x")] if i == 40 else None) for i in range(64)]
    data = encode_batch(recs, base_offset=0)
    fast, slow = both(data, 0, monkeypatch)
    same(fast, slow)
    assert fast.headers.to_pylist()[40] == [{"key": "h", "value": b"x"}]


@needs_compiled
def test_malformed_bodies_are_declined_not_misread():
    record = b"\x10\x00\x00\x00\x02a\x02b\x00"   # length 8: attrs, deltas 0, key a, value b
    assert compiled.decode_bodies([record[:4]], [1]) is None         # length past the end
    assert compiled.decode_bodies([record + b"\x00"], [1]) is None   # bytes after the last record
    assert compiled.decode_bodies([record[:-1] + b"\x02"], [1]) is None  # a header: declined
    got = compiled.decode_bodies([record], [1])
    off, ts, keys, values = got
    assert off.tolist() == [0] and ts.tolist() == [0]
    assert bytes(keys[2]) == b"a" and bytes(values[2]) == b"b" and keys[0] is None
