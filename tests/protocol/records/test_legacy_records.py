"""Legacy message sets (magic 0/1) against kafka-python, and conversion to and from v2."""
from __future__ import annotations

import random
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gregor.protocol.compression import compress
from gregor.protocol.errors import (CorruptMessageError, InvalidRecordError,
                                   UnsupportedCompressionTypeError)
from gregor.protocol.primitives import DecodeError
from gregor.protocol.records.batch import (LOG_APPEND_TIME, decode_batches,
                                           encode_batch, encode_control_batch)
from gregor.protocol.records.legacy import (LegacyMessage, decode_any, decode_message_set, down_convert,
                                            encode_message, encode_message_set, up_convert)

klegacy = pytest.importorskip("kafka.record.legacy_records",
                              reason="kafka-python is a test dependency")
from kafka.record.memory_records import MemoryRecords  # noqa: E402

CASES = [(magic, codec) for magic in (0, 1) for codec in (0, 1, 2, 3)]


def needs_xxhash(magic, codec):
    if magic == 0 and codec == 3:
        pytest.importorskip("xxhash", reason="kafka-python needs xxhash for magic 0 LZ4")


def kafka_python_read(data):
    mr = MemoryRecords(data)
    out = []
    while True:
        b = mr.next_batch()
        if b is None:
            return out
        out.extend(b)


def messages(n=25):
    return [(1_600_000_000_000 + i, b"k%d" % i if i % 2 else None,
             (b"value %d " % i) * (i % 4) if i % 6 != 5 else None) for i in range(n)]


@pytest.mark.parametrize("magic,codec", CASES)
def test_we_read_kafka_python_message_sets(magic, codec):
    needs_xxhash(magic, codec)
    kb = klegacy.LegacyRecordBatchBuilder(magic=magic, compression_type=codec,
                                          batch_size=1 << 20)
    for i, (ts, k, v) in enumerate(messages()):
        kb.append(i, timestamp=ts if magic else None, key=k, value=v)
    data = bytes(kb.build())
    ours = decode_message_set(data)
    theirs = kafka_python_read(data)
    assert [(m.offset, m.timestamp, m.key, m.value) for m in ours] == \
        [(r.offset, r.timestamp if magic else -1, r.key, r.value) for r in theirs]
    assert [(m.key, m.value) for m in ours] == [(k, v) for _, k, v in messages()]


@pytest.mark.parametrize("magic,codec", CASES)
def test_kafka_python_reads_our_message_sets(magic, codec):
    needs_xxhash(magic, codec)
    msgs = [LegacyMessage(100 + i, ts, k, v, magic) for i, (ts, k, v) in enumerate(messages())]
    data = encode_message_set(msgs, magic, codec)
    theirs = kafka_python_read(data)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in theirs] == \
        [(100 + i, ts if magic else None, k, v) for i, (ts, k, v) in enumerate(messages())]
    assert decode_message_set(data) == msgs


@pytest.mark.parametrize("magic,codec", CASES)
def test_up_and_down_conversion(magic, codec):
    needs_xxhash(magic, codec)
    kb = klegacy.LegacyRecordBatchBuilder(magic=magic, compression_type=codec,
                                          batch_size=1 << 20)
    for i, (ts, k, v) in enumerate(messages()):
        kb.append(i, timestamp=ts if magic else None, key=k, value=v)
    (batch,) = decode_batches(up_convert(bytes(kb.build()), base_offset=1000))
    assert batch.compression == codec
    assert [(r.offset, r.timestamp, r.key, r.value) for r in batch] == \
        [(1000 + i, ts if magic else -1, k, v) for i, (ts, k, v) in enumerate(messages())]
    v2 = encode_batch([(ts, k, v, [("dropped", b"h")]) for ts, k, v in messages()],
                      base_offset=50, compression=codec)
    down = down_convert(v2 + encode_control_batch(True, producer_id=1, producer_epoch=0,
                                                  base_offset=75), magic)
    expected = [(50 + i, ts if magic else None, k, v) for i, (ts, k, v) in enumerate(messages())]
    assert [(r.offset, r.timestamp, r.key, r.value) for r in kafka_python_read(down)] == expected
    assert [(r.offset, r.value) for r in decode_any(down)] == [(o, v) for o, _, _, v in expected]


def test_log_append_time_wrapper_sets_inner_timestamps():
    v2 = encode_batch([(5, None, b"a", None), (6, None, b"b", None)], log_append_time=True,
                      compression=1)
    down = down_convert(v2, 1)
    msgs = decode_message_set(down)
    assert [(m.timestamp, m.timestamp_type) for m in msgs] == [(6, LOG_APPEND_TIME)] * 2
    assert [r.timestamp for r in kafka_python_read(down)] == [6, 6]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([0, 1]), st.sampled_from([0, 1, 2, 3, 4]),
       st.lists(st.tuples(st.integers(0, 2**41), st.none() | st.binary(max_size=20),
                          st.none() | st.binary(max_size=200)), min_size=1, max_size=30))
def test_conversion_round_trip_property(magic, codec, recs):
    v2 = encode_batch([(ts, k, v, None) for ts, k, v in recs], base_offset=10,
                      compression=codec)
    if codec == 4:
        with pytest.raises(UnsupportedCompressionTypeError):
            down_convert(v2, magic)
        down = down_convert(v2, magic, compression=2)     # explicitly recompressed
    else:
        down = down_convert(v2, magic)
    back = decode_batches(up_convert(down, base_offset=10))[0]
    assert [(r.offset, r.key, r.value) for r in back] == \
        [(10 + i, k, v) for i, (_, k, v) in enumerate(recs)]
    assert [r.timestamp for r in back] == ([ts for ts, _, _ in recs] if magic else [-1] * len(recs))


# --- hostile bytes ----------------------------------------------------------------------------

ALLOWED = (DecodeError, CorruptMessageError, InvalidRecordError)


def test_crc_damage_detected():
    data = encode_message_set([LegacyMessage(0, 5, b"k", b"value", 1)], 1)
    for pos in range(12, len(data)):
        bad = bytearray(data)
        bad[pos] ^= 0x40
        with pytest.raises(ALLOWED):
            decode_message_set(bytes(bad), allow_partial=False)


def test_truncation_and_partial_tail():
    data = encode_message_set([LegacyMessage(i, 5, None, b"v%d" % i, 1) for i in range(3)], 1)
    one = len(data) // 3
    for cut in range(len(data)):
        assert len(decode_message_set(data[:cut])) == cut // one
        if cut % one:
            with pytest.raises(CorruptMessageError):
                decode_message_set(data[:cut], allow_partial=False)


def test_nested_compression_and_empty_wrapper_are_rejected():
    inner = encode_message(0, 1, 1, 0, None, compress(1, encode_message(0, 1, 0, 0, None, b"x")))
    nested = encode_message(0, 1, 1, 0, None, compress(1, inner))
    with pytest.raises(CorruptMessageError, match="inside a compressed"):
        decode_message_set(nested)
    empty = encode_message(0, 1, 1, 0, None, compress(1, b""))
    with pytest.raises(InvalidRecordError):
        decode_message_set(empty)


def test_zstd_is_refused_in_legacy_formats():
    with pytest.raises(ValueError, match="magic 2"):
        encode_message_set([LegacyMessage(0, 1, None, b"v", 1)], 1, 4)
    wrapper = encode_message(0, 1, 4, 0, None, compress(4, encode_message(0, 1, 0, 0, None, b"x")))
    with pytest.raises(CorruptMessageError, match="cannot carry"):
        decode_message_set(wrapper)


def test_bad_lengths_inside_a_message():
    body = struct.pack(">bbqi", 1, 0, 0, 1000) + b"short"   # key claims 1000 bytes
    msg = struct.pack(">I", zlib.crc32(body)) + body
    data = struct.pack(">qi", 0, len(msg)) + msg
    with pytest.raises(CorruptMessageError):
        decode_message_set(data)


def test_random_bytes_raise_only_typed_errors():
    rnd = random.Random(9)
    good = encode_message_set([LegacyMessage(i, 5, b"k", b"v" * i, 1) for i in range(5)], 1, 1)
    for i in range(800):
        if i % 2:
            buf = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 80)))
        else:
            b = bytearray(good)
            b[rnd.randrange(len(b))] = rnd.getrandbits(8)
            buf = bytes(b)
        try:
            decode_message_set(buf, verify_crc=bool(i % 3))
        except ALLOWED:
            pass
