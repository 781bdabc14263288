"""The consumer's Arrow output (decode_partition_arrow / ArrowRecords) against the list columns
of decode_partition, on the same fetched bytes (no network)."""
from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from gregor.client.consumer.arrow_records import (ArrowRecords, HEADERS_TYPE,
                                                  decode_partition_arrow)
from gregor.client.consumer.columns import CorruptRecordError, decode_partition
from gregor.protocol import compression as C
from gregor.protocol.records.batch import encode_batch, encode_control_batch
from gregor.protocol.records.header import set_log_append_time
from gregor.protocol.records.legacy import encode_message_set

T0 = 1_700_000_000_000
COLUMNS = ("offsets", "timestamps", "timestamp_types", "keys", "values", "headers",
           "leader_epochs")


def plain(n, start=0, headers=False):
    return [(T0 + i * 7, None if i % 5 == 0 else b"k%d" % i,
             None if i % 7 == 3 else (b"" if i % 11 == 1 else b"v" * (i % 300)),
             [("h", b"x%d" % i), ("n", None)] if headers and i % 2 else None)
            for i in range(start, start + n)]


def assert_same(arrow: ArrowRecords, data, fetch_offset, **kw):
    want = decode_partition(data, "t", 2, fetch_offset, **kw)
    got = arrow.to_columns()
    for name in COLUMNS:
        assert getattr(got, name) == getattr(want, name), name
    assert arrow.next_offset == want.next_offset
    assert arrow.records() == want.records()
    assert arrow.to_arrow().equals(want.to_arrow())


def test_arrow_columns_have_the_documented_types():
    data = encode_batch(plain(100), base_offset=0)
    a = decode_partition_arrow(data, "t", 2, 0)
    assert a.offsets.type == pa.int64() and a.timestamps.type == pa.int64()
    assert a.keys.type == pa.binary() and a.values.type == pa.binary()
    assert a.timestamp_types.type == pa.int32() and a.leader_epochs.type == pa.int32()
    assert a.headers.type == HEADERS_TYPE
    assert a.keys.null_count == 20 and a.values.null_count == 14
    # The fast path copies keys/values out: nothing keeps the whole fetch alive.
    assert a.values.buffers()[2].size < len(data)


@pytest.mark.parametrize("codec", [C.NONE, C.GZIP, C.SNAPPY, C.LZ4, C.ZSTD])
@pytest.mark.parametrize("fetch_offset", [0, 37, 150])
def test_every_codec_matches_the_list_columns(codec, fetch_offset, monkeypatch):
    lat = bytearray(encode_batch(plain(50, 200), base_offset=200, compression=codec,
                                 log_append_time=True))
    set_log_append_time(lat, 0, len(lat), T0 + 12345)
    data = (encode_batch(plain(100), base_offset=0, compression=codec)
            + encode_control_batch(True, producer_id=1, producer_epoch=0, base_offset=100)
            + encode_batch(plain(99, 101), base_offset=101, compression=codec) + bytes(lat))
    with monkeypatch.context() as m:  # the numpy path, not the record loop's conversion
        m.setattr(ArrowRecords, "from_columns", None)
        a = decode_partition_arrow(data, "t", 2, fetch_offset)
    # 249 records at 0..249 without 100 (the marker)
    assert a.next_offset == 250 and len(a) == 249 - fetch_offset + (fetch_offset > 100)
    assert_same(a, data, fetch_offset)


@pytest.mark.parametrize("codec", [C.NONE, C.LZ4])
def test_batches_with_headers_fall_back_and_still_match(codec):
    data = encode_batch(plain(60, headers=True), base_offset=0, compression=codec)
    a = decode_partition_arrow(data, "t", 2, 3)
    assert a.headers.to_pylist()[0] == [{"key": "h", "value": b"x3"}, {"key": "n", "value": None}]
    assert_same(a, data, 3)


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_message_sets_fall_back_and_still_match(magic):
    msgs = [(5 + i, T0 + i, None if i % 3 == 0 else b"k%d" % i, b"v%d" % i)
            for i in range(40)]
    data = encode_message_set(msgs, magic, C.LZ4)
    a = decode_partition_arrow(data, "t", 2, 0)
    assert len(a) == 40
    assert_same(a, data, 0)


def test_read_committed_and_empty_fetches():
    aborted = encode_batch(plain(40), base_offset=0, producer_id=7, producer_epoch=0,
                           base_sequence=0, transactional=True)
    marker = encode_control_batch(False, producer_id=7, producer_epoch=0, base_offset=40)
    kept = encode_batch(plain(40, 41), base_offset=41)
    data = aborted + marker + kept
    kw = dict(aborted=[{"producer_id": 7, "first_offset": 0}], read_committed=True)
    a = decode_partition_arrow(data, "t", 2, 0, **kw)
    assert a.offset_at(0) == 41 and len(a) == 40
    assert_same(a, data, 0, **kw)
    empty = decode_partition_arrow(b"", "t", 2, 9)
    assert len(empty) == 0 and empty.next_offset == 9
    assert_same(empty, b"", 9)
    only_marker = decode_partition_arrow(marker, "t", 2, 40)
    assert len(only_marker) == 0 and only_marker.next_offset == 41


def test_corruption_is_reported_as_on_the_list_path():
    buf = bytearray(encode_batch(plain(50), base_offset=0))
    buf[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="t-2"):
        decode_partition_arrow(bytes(buf), "t", 2, 0)


def test_slice_is_a_view_and_knows_the_next_offset():
    a = decode_partition_arrow(encode_batch(plain(100), base_offset=10), "t", 2, 0)
    s = a.slice(5, 20)
    assert len(s) == 15 and s.offset_at(0) == 15 and s.next_offset == 30
    assert s.keys.to_pylist() == a.keys.to_pylist()[5:20]
    assert a.slice(90, 100).next_offset == a.next_offset == 110
    assert ArrowRecords.from_columns(s.to_columns()).to_arrow().equals(s.to_arrow())


_maybe_bytes = st.one_of(st.none(), st.binary(max_size=300))
_record = st.tuples(st.integers(min_value=0, max_value=2**40), _maybe_bytes, _maybe_bytes)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(_record, min_size=1, max_size=60), min_size=1, max_size=4),
       st.sampled_from([C.NONE, C.LZ4, C.ZSTD]), st.integers(min_value=0, max_value=50),
       st.booleans())
def test_round_trip_any_fetch(batches, codec, skip, with_headers):
    data, base = b"", 0
    for rs in batches:
        data += encode_batch([(ts, k, v, [("a", v)] if with_headers else None)
                              for ts, k, v in rs], base_offset=base, compression=codec)
        base += len(rs)
    assert_same(decode_partition_arrow(data, "t", 2, skip), data, skip)


def test_record_fields_declines_negative_record_lengths():
    import gregor.client.consumer.vector_decode as vd
    # 40 records of one size; the 2nd record's length varint made odd (negative): whether the
    # scan's step then lands on the end or not, numpy's re-read of the lengths declines it.
    rs = [(T0, b"k", b"v" * 10, None)] * 40
    body = bytearray(encode_batch(rs, base_offset=0)[61:])
    size = len(body) // 40
    assert vd.record_fields([bytes(body)], [40]) is not None
    body[size] |= 1
    assert vd.record_fields([bytes(body)], [40]) is None
    with pytest.raises(CorruptRecordError):
        decode_partition_arrow(_with_body(bytes(body), 40), "t", 2, 0, check_crcs=False)


def _with_body(body: bytes, count: int) -> bytes:
    """A v2 batch holding `body` as its records (CRC not recomputed: decode with check_crcs
    off)."""
    import struct
    head = bytearray(encode_batch([(T0, b"k", b"v" * 10, None)] * count, base_offset=0)[:61])
    struct.pack_into(">i", head, 8, 49 + len(body))  # batch length after the length field
    return bytes(head) + body


_segment = st.tuples(st.integers(min_value=1, max_value=200), st.integers(min_value=0, max_value=400),
                     st.booleans())


@settings(max_examples=40, deadline=None)
@given(st.lists(_segment, min_size=1, max_size=6), st.integers(min_value=1, max_value=3))
def test_runs_of_equal_records_decode_like_the_loop(segments, n_batches):
    # Runs of equal-size records (the scan's numpy shortcut), broken by other sizes, null keys,
    # 2-byte record lengths (values >= ~60 B), and batch boundaries inside runs.
    import gregor.client.consumer.vector_decode as vd
    rs = []
    for count, size, null_key in segments:
        rs += [(T0, None if null_key else b"key", b"x" * size, None)] * count
    cut = [len(rs) * i // n_batches for i in range(n_batches + 1)]
    data = b"".join(encode_batch(rs[a:b], base_offset=a) for a, b in zip(cut, cut[1:]) if b > a)
    bodies = [encode_batch(rs[a:b], base_offset=a)[61:] for a, b in zip(cut, cut[1:]) if b > a]
    for body, (a, b) in zip(bodies, [(a, b) for a, b in zip(cut, cut[1:]) if b > a]):
        heads = vd._record_heads(body, b - a)
        want, pos = [], 0
        for _ in range(b - a):  # the plain definition: each record starts where the last ended
            want.append(pos)
            length, after = _zigzag(body, pos)
            pos = after + length
        assert heads == want
    assert_same(decode_partition_arrow(data, "t", 2, 0), data, 0)


def _zigzag(buf: bytes, pos: int):
    shift = raw = 0
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
