"""Compression codecs: round trips, the formats real clients write and read, the size cap."""
from __future__ import annotations

import os
import random
import struct
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gregor.protocol import compression as c
from gregor.protocol.compression import (GZIP, LZ4, NONE, SNAPPY, ZSTD, DecodeError, codec_id,
                                         compress, decompress)

kcodec = pytest.importorskip("kafka.codec", reason="kafka-python is a test dependency")

CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]
SAMPLES = [b"", b"x", os.urandom(1000), b"abc" * 50000, os.urandom(70000) + b"\0" * 70000]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("sample", range(len(SAMPLES)))
def test_round_trip(codec, sample):
    data = SAMPLES[sample]
    assert decompress(codec, compress(codec, data), max_size=len(data)) == data


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(CODECS), st.binary(max_size=3000), st.integers(1, 20))
def test_round_trip_property(codec, chunk, repeat):
    data = chunk * repeat
    assert decompress(codec, compress(codec, data)) == data


def test_codec_ids():
    assert [codec_id(n) for n in ("none", "gzip", "snappy", "lz4", "zstd")] == [0, 1, 2, 3, 4]
    assert codec_id("LZ4") == 3 and codec_id(None) == 0 and codec_id(4) == 4
    assert decompress("zstd", compress("zstd", b"by name")) == b"by name"
    with pytest.raises(ValueError, match="unknown compression"):
        codec_id("brotli")
    with pytest.raises(ValueError):
        codec_id(7)
    with pytest.raises(DecodeError, match="unknown compression codec id 6"):
        decompress(6, b"abc")


# --- what other clients write and read --------------------------------------------------------

@pytest.mark.parametrize("sample", range(len(SAMPLES)))
def test_kafka_python_codecs_read_ours_and_we_read_theirs(sample):
    data = SAMPLES[sample]
    assert kcodec.gzip_decode(compress(GZIP, data)) == data
    assert kcodec.snappy_decode(compress(SNAPPY, data)) == data
    assert kcodec.lz4_decode(compress(LZ4, data)) == data
    assert kcodec.zstd_decode(compress(ZSTD, data)) == data
    assert decompress(GZIP, kcodec.gzip_encode(data)) == data
    assert decompress(SNAPPY, kcodec.snappy_encode(data)) == data                # snappy-java
    assert decompress(SNAPPY, kcodec.snappy_encode(data, xerial_compatible=False)) == data
    assert decompress(LZ4, kcodec.lz4_encode(data)) == data
    assert decompress(ZSTD, kcodec.zstd_encode(data)) == data


def test_snappy_writes_snappy_java_framing_in_32k_blocks():
    data = os.urandom(100_000)
    out = compress(SNAPPY, data)
    assert out[:8] == b"\x82SNAPPY\x00" and struct.unpack(">ii", out[8:16]) == (1, 1)
    pos, blocks = 16, 0
    while pos < len(out):
        size = struct.unpack_from(">i", out, pos)[0]
        pos += 4 + size
        blocks += 1
    assert pos == len(out) and blocks == 4     # 100000 bytes / 32 KiB blocks


def test_snappy_accepts_little_endian_version_fields():
    data = b"hello" * 1000
    framed = compress(SNAPPY, data)
    swapped = framed[:8] + struct.pack("<ii", 1, 1) + framed[16:]
    assert decompress(SNAPPY, swapped) == data


def test_snappy_plain_raw_from_python_snappy():
    snappy = pytest.importorskip("snappy", reason="python-snappy is a test dependency")
    data = os.urandom(5000) * 3
    assert decompress(SNAPPY, snappy.compress(data)) == data


def test_lz4_frames_are_independent_blocks_with_size():
    import lz4.frame
    info = lz4.frame.get_frame_info(compress(LZ4, b"abc" * 100000))
    assert info["block_linked"] is False and info["content_size"] == 300000


def test_lz4_legacy_checksum_matches_old_kafka_both_ways():
    pytest.importorskip("xxhash", reason="kafka-python needs xxhash for old-format LZ4")
    data = b"legacy lz4 " * 3000
    ours = compress(LZ4, data, legacy_lz4_checksum=True)
    assert kcodec.lz4_decode_old_kafka(ours) == data
    theirs = kcodec.lz4_encode_old_kafka(data)
    assert decompress(LZ4, theirs, lenient_lz4_checksum=True) == data
    # a strict reader refuses the broken checksum; a lenient one accepts both kinds
    with pytest.raises(DecodeError):
        decompress(LZ4, ours)
    assert decompress(LZ4, compress(LZ4, data), lenient_lz4_checksum=True) == data


def test_xxh32_matches_reference():
    xxhash = pytest.importorskip("xxhash", reason="reference xxHash implementation")
    rnd = random.Random(5)
    for n in list(range(0, 40)) + [100, 1000]:
        data = bytes(rnd.getrandbits(8) for _ in range(n))
        assert c.xxh32(data) == xxhash.xxh32(data).intdigest()


def test_zstd_streamed_frames_without_size_and_several_frames():
    import zstandard
    data = os.urandom(10000) * 5
    no_size = zstandard.ZstdCompressor(write_content_size=False).compress(data)
    assert zstandard.frame_content_size(no_size) == -1
    assert decompress(ZSTD, no_size) == data
    two = compress(ZSTD, data[:7]) + no_size
    assert decompress(ZSTD, two) == data[:7] + data
    with_checksum = zstandard.ZstdCompressor(write_checksum=True,
                                             write_content_size=False).compress(data)
    assert decompress(ZSTD, with_checksum) == data


def test_gzip_concatenated_members():
    assert decompress(GZIP, compress(GZIP, b"one ") + compress(GZIP, b"two")) == b"one two"


# --- hostile input ---------------------------------------------------------------------------

@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_truncated_input_is_a_decode_error(codec):
    data = os.urandom(3000) + b"z" * 30000
    packed = compress(codec, data)
    for cut in sorted({0, 1, 5, 10, 17, len(packed) // 2, len(packed) - 4, len(packed) - 1}):
        with pytest.raises(DecodeError):
            decompress(codec, packed[:cut])


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_random_and_mutated_bytes_only_raise_decode_error(codec):
    rnd = random.Random(codec)
    good = compress(codec, b"some text that compresses " * 200)
    for i in range(300):
        if i % 3 == 0:
            data = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 64)))
        else:
            data = bytearray(good)
            for _ in range(rnd.randint(1, 4)):
                data[rnd.randrange(len(data))] = rnd.getrandbits(8)
            data = bytes(data)
        try:
            out = decompress(codec, data, max_size=1 << 20)
        except DecodeError:
            continue
        assert len(out) <= 1 << 20


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_output_over_the_cap_is_refused(codec):
    data = b"\0" * (4 << 20)
    bomb = compress(codec, data)
    assert len(bomb) < 300_000
    with pytest.raises(DecodeError, match="cap"):
        decompress(codec, bomb, max_size=1 << 20)
    assert decompress(codec, bomb, max_size=4 << 20) == data


@pytest.mark.parametrize("codec", [GZIP, LZ4, ZSTD])
def test_bomb_costs_no_more_than_the_cap(codec):
    import zstandard
    data = b"\0" * (64 << 20)
    if codec == ZSTD:     # a streaming writer leaves the size out: the careful path
        bomb = zstandard.ZstdCompressor(write_content_size=False).compress(data)
    else:
        bomb = compress(codec, data)
    del data
    cap = 2 << 20
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError):
            decompress(codec, bomb, max_size=cap)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 * cap, peak


@pytest.mark.parametrize("codec", [LZ4, ZSTD])
def test_size_claimed_in_header_above_cap_is_refused_before_decoding(codec):
    packed = compress(codec, b"a" * 5000)
    with pytest.raises(DecodeError, match="cap"):
        decompress(codec, packed, max_size=4999)


def test_snappy_claimed_length_above_cap_is_refused():
    raw = b"\xff\xff\xff\x7f" + b"\0" * 10      # raw snappy header claiming ~256 MiB
    with pytest.raises(DecodeError):
        decompress(SNAPPY, raw, max_size=1 << 20)
    framed = c.SNAPPY_JAVA_MAGIC + struct.pack(">ii", 1, 1) + struct.pack(">i", 14) + raw
    with pytest.raises(DecodeError):
        decompress(SNAPPY, framed, max_size=1 << 20)


@pytest.mark.parametrize("codec", CODECS)
def test_buffers_other_than_bytes(codec):
    data = b"memoryview input " * 3000
    packed = compress(codec, memoryview(data))
    assert decompress(codec, memoryview(packed)) == data
    assert decompress(codec, bytearray(packed)) == data
    framed = b"xx" + packed
    assert decompress(codec, memoryview(framed)[2:]) == data
