"""The consumer's columnar decoding of fetched partition bytes (no network)."""
from __future__ import annotations

import pytest

from gregor.client.consumer.columns import (CorruptRecordError, PartitionRecords,
                                            decode_partition)
from gregor.protocol import compression as C
from gregor.protocol.records.batch import encode_batch, encode_control_batch, decode_batches
from gregor.protocol.records.header import CRC_OFFSET
from gregor.protocol.records.legacy import encode_message_set

T0 = 1_700_000_000_000


def recs(n, start=0, headers=True):
    return [(T0 + i, None if i % 5 == 0 else b"k%d" % i, None if i % 7 == 3 else b"v%d" % i,
             [("h", b"x%d" % i), ("n", None)] if headers and i % 2 else None)
            for i in range(start, start + n)]


def expected(rs, base):
    return [(base + i, ts, k, v, list(h or [])) for i, (ts, k, v, h) in enumerate(rs)]


def columns(pr: PartitionRecords):
    return list(zip(pr.offsets, pr.timestamps, pr.keys, pr.values, pr.headers))


@pytest.mark.parametrize("codec", [C.NONE, C.GZIP, C.SNAPPY, C.LZ4, C.ZSTD])
def test_batches_of_every_codec_decode_to_columns(codec):
    a = encode_batch(recs(10), base_offset=0, compression=codec)
    b = encode_batch(recs(5, 10), base_offset=10, compression=codec)
    pr = decode_partition(a + b, "t", 3, 0)
    assert columns(pr) == expected(recs(10), 0) + expected(recs(5, 10), 10)
    assert pr.next_offset == 15 and pr.timestamp_types == [0] * 15
    assert (pr.topic, pr.partition) == ("t", 3)


def test_fetch_offset_inside_a_batch_skips_earlier_records():
    data = encode_batch(recs(10), base_offset=100)
    pr = decode_partition(data, "t", 0, 104)
    assert pr.offsets == list(range(104, 110))
    assert pr.next_offset == 110


def test_batches_entirely_before_the_fetch_offset_are_skipped():
    data = encode_batch(recs(3), base_offset=0) + encode_batch(recs(3), base_offset=3)
    pr = decode_partition(data, "t", 0, 3)
    assert pr.offsets == [3, 4, 5]


def test_log_append_time_batches_use_the_batch_max_timestamp():
    data = encode_batch(recs(3), base_offset=0, log_append_time=True)
    buf = bytearray(data)
    from gregor.protocol.records.header import set_log_append_time
    set_log_append_time(buf, 0, len(buf), T0 + 999)
    pr = decode_partition(bytes(buf), "t", 0, 0)
    assert pr.timestamps == [T0 + 999] * 3 and pr.timestamp_types == [1] * 3


def test_control_batches_are_skipped_but_advance_the_position():
    data = encode_batch(recs(2), base_offset=0, producer_id=7, producer_epoch=0,
                        base_sequence=0, transactional=True)
    data += encode_control_batch(True, producer_id=7, producer_epoch=0, base_offset=2)
    pr = decode_partition(data, "t", 0, 0)
    assert pr.offsets == [0, 1] and pr.next_offset == 3
    only_marker = decode_partition(data[len(data) - len(encode_control_batch(
        True, producer_id=7, producer_epoch=0, base_offset=2)):], "t", 0, 2)
    assert len(only_marker) == 0 and only_marker.next_offset == 3


def test_read_committed_drops_aborted_transactions():
    aborted = encode_batch(recs(2), base_offset=0, producer_id=1, producer_epoch=0,
                           base_sequence=0, transactional=True)
    committed = encode_batch(recs(2, 2), base_offset=2, producer_id=2, producer_epoch=0,
                             base_sequence=0, transactional=True)
    abort = encode_control_batch(False, producer_id=1, producer_epoch=0, base_offset=4)
    commit = encode_control_batch(True, producer_id=2, producer_epoch=0, base_offset=5)
    plain = encode_batch(recs(1, 6), base_offset=6)
    data = aborted + committed + abort + commit + plain
    listed = [{"producer_id": 1, "first_offset": 0}]
    rc = decode_partition(data, "t", 0, 0, aborted=listed, read_committed=True)
    assert rc.offsets == [2, 3, 6] and rc.next_offset == 7
    ru = decode_partition(data, "t", 0, 0, aborted=listed, read_committed=False)
    assert ru.offsets == [0, 1, 2, 3, 6]


def test_partial_trailing_batch_is_left_for_the_next_fetch():
    a = encode_batch(recs(3), base_offset=0)
    b = encode_batch(recs(3, 3), base_offset=3)
    pr = decode_partition(a + b[:-5], "t", 0, 0)
    assert pr.offsets == [0, 1, 2] and pr.next_offset == 3
    assert len(decode_partition(b[:30], "t", 0, 3)) == 0


def test_crc_mismatch_is_a_corrupt_record_error_naming_the_partition():
    data = bytearray(encode_batch(recs(3), base_offset=0))
    data[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="t-5"):
        decode_partition(bytes(data), "t", 5, 0)


def test_malformed_record_is_a_corrupt_record_error():
    from gregor.protocol.records.header import compute_crc
    import struct
    data = bytearray(encode_batch([(T0, b"key", b"value", None)], base_offset=0))
    data[61] = 0x7E  # record length varint: 63, far more than the record holds
    struct.pack_into(">I", data, CRC_OFFSET, compute_crc(data, 0, len(data)))
    with pytest.raises(CorruptRecordError, match="does not parse"):
        decode_partition(bytes(data), "t", 0, 0)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [C.NONE, C.GZIP, C.SNAPPY, C.LZ4])
def test_legacy_message_sets_decode(magic, codec):
    msgs = [(i, T0 + i, b"k%d" % i, b"v%d" % i) for i in range(4)]
    data = encode_message_set(msgs, magic, codec)
    pr = decode_partition(data, "t", 0, 1)
    assert pr.offsets == [1, 2, 3]
    assert pr.values == [b"v1", b"v2", b"v3"] and pr.keys == [b"k1", b"k2", b"k3"]
    if magic == 0:
        assert pr.timestamps == [-1] * 3 and pr.timestamp_types == [-1] * 3
    else:
        assert pr.timestamps == [T0 + 1, T0 + 2, T0 + 3] and pr.timestamp_types == [0] * 3
    assert pr.next_offset == 4


def test_columns_agree_with_the_records_layer_decoder():
    data = encode_batch(recs(50), base_offset=7, compression=C.LZ4)
    ref = [(r.offset, r.timestamp, r.key, r.value, r.headers)
           for b in decode_batches(data) for r in b.records]
    ours = columns(decode_partition(data, "t", 0, 0))
    assert [(o, ts, k, v, list(h)) for o, ts, k, v, h in ref] == ours


def test_split_and_records_and_arrow():
    pr = decode_partition(encode_batch(recs(6), base_offset=0), "t", 2, 0)
    pr.high_watermark = 6
    head = pr.split(4)
    assert head.offsets == [0, 1, 2, 3] and head.next_offset == 4
    assert pr.offsets == [4, 5] and pr.next_offset == 6
    r = head.records()[1]
    assert (r.topic, r.partition, r.offset, r.key, r.value, r.headers) == \
        ("t", 2, 1, b"k1", b"v1", [("h", b"x1"), ("n", None)])
    assert r.timestamp_type_name == "CreateTime"
    rb = head.to_arrow()
    assert rb.num_rows == 4
    assert rb.schema.names == ["key", "value", "topic", "partition", "offset", "timestamp",
                               "timestampType", "headers"]
    assert rb.column("offset").to_pylist() == [0, 1, 2, 3]
    assert rb.column("key").to_pylist() == [None, b"k1", b"k2", b"k3"]
    assert rb.column("headers").to_pylist()[1] == [{"key": "h", "value": b"x1"},
                                                   {"key": "n", "value": None}]
    assert PartitionRecords("t", 0).to_arrow().num_rows == 0


from hypothesis import given, settings, strategies as st  # noqa: E402

_maybe_bytes = st.one_of(st.none(), st.binary(max_size=300))
_record = st.tuples(st.integers(min_value=0, max_value=2**40), _maybe_bytes, _maybe_bytes,
                    st.lists(st.tuples(st.text(max_size=8), _maybe_bytes), max_size=3))


@settings(max_examples=60, deadline=None)
@given(st.lists(_record, min_size=1, max_size=90), st.sampled_from([C.NONE, C.LZ4, C.GZIP]),
       st.integers(min_value=0, max_value=10**12))
def test_round_trip_any_records(rs, codec, base):
    data = encode_batch([(ts, k, v, h or None) for ts, k, v, h in rs], base_offset=base,
                        compression=codec)
    pr = decode_partition(data, "t", 0, base)
    assert pr.offsets == [base + i for i in range(len(rs))]
    assert pr.keys == [k for _, k, _, _ in rs] and pr.values == [v for _, _, v, _ in rs]
    assert pr.headers == [list(h) for _, _, _, h in rs]
    assert pr.timestamps == [ts for ts, _, _, _ in rs]


def test_vector_and_loop_decoders_agree(monkeypatch):
    import gregor.client.consumer.vector_decode as vd
    from gregor.protocol.records.header import set_log_append_time
    plain = [(T0 + i * 300, None if i % 4 == 0 else b"k%d" % i,
              None if i % 9 == 2 else b"v" * (i % 200), None) for i in range(300)]
    lat = bytearray(encode_batch(plain[:50], base_offset=300, compression=C.LZ4))
    set_log_append_time(lat, 0, len(lat), T0 + 12345)
    data = (encode_batch(plain[:100], base_offset=0) + encode_batch(plain[100:], base_offset=100,
                                                                    compression=C.ZSTD)
            + bytes(lat))
    fast = decode_partition(data, "t", 0, 37)
    monkeypatch.setattr(vd, "MIN_RECORDS", 10**9)  # force the per-record loop
    slow = decode_partition(data, "t", 0, 37)
    for name in ("offsets", "timestamps", "timestamp_types", "keys", "values", "headers",
                 "leader_epochs"):
        assert getattr(fast, name) == getattr(slow, name), name
    assert fast.offsets[0] == 37 and fast.next_offset == slow.next_offset == 350
    assert fast.timestamps[-1] == T0 + 12345 and fast.timestamp_types[-1] == 1


def test_vector_decoder_declines_batches_with_headers():
    import gregor.client.consumer.vector_decode as vd
    body = encode_batch(recs(40, headers=True), base_offset=0)[61:]
    assert vd.decode_columns([body], [40]) is None
    body = encode_batch(recs(40, headers=False), base_offset=0)[61:]
    assert vd.decode_columns([body], [40]) is not None
    assert vd.decode_columns([body[:-3]], [40]) is None  # truncated: the loop reports it


_plain_record = st.tuples(st.integers(min_value=0, max_value=2**40), _maybe_bytes, _maybe_bytes)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(_plain_record, min_size=1, max_size=60), min_size=1, max_size=4),
       st.integers(min_value=0, max_value=50))
def test_round_trip_headerless_fetches(batches, skip):
    # Headerless batches take the numpy path when a fetch holds >= 32 records.
    data, base, flat = b"", 0, []
    for rs in batches:
        data += encode_batch([(ts, k, v, None) for ts, k, v in rs], base_offset=base)
        flat += [(base + i, ts, k, v) for i, (ts, k, v) in enumerate(rs)]
        base += len(rs)
    pr = decode_partition(data, "t", 0, skip)
    want = [r for r in flat if r[0] >= skip]
    assert list(zip(pr.offsets, pr.timestamps, pr.keys, pr.values)) == want
    assert pr.headers == [[] for _ in want] and pr.next_offset == max(base, skip)
