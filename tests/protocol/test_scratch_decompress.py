"""decompress_transient: the same bytes, errors and bounds as decompress(), in a buffer the
thread reuses; a frame's claimed size is never trusted beyond what its bytes could hold."""
from __future__ import annotations

import struct
import threading

import lz4.frame
import pytest

from gregor.protocol import scratch_decompress as sd
from gregor.protocol.compression import GZIP, LZ4, ZSTD, compress, decompress, xxh32
from gregor.protocol.primitives import DecodeError

DATA = b"".join(b"record %08d " % i + b"x" * (i % 50) for i in range(20_000))


def with_content_size(frame: bytes, size: int) -> bytes:
    """The frame with its header's content size field set to size (checksum redone)."""
    out = bytearray(frame)
    struct.pack_into("<Q", out, 6, size)
    out[14] = (xxh32(bytes(out[4:14])) >> 8) & 0xFF
    return bytes(out)


def test_lz4_with_content_size_comes_back_from_the_threads_buffer():
    frame = compress(LZ4, DATA)
    got = sd.decompress_transient(LZ4, frame, 1 << 26)
    assert isinstance(got, memoryview) and got.readonly
    assert bytes(got) == DATA
    again = sd.decompress_transient(LZ4, memoryview(frame), 1 << 26)
    assert again.obj is got.obj           # the same buffer, not a new allocation
    assert bytes(again) == DATA


def test_each_thread_has_its_own_buffer():
    frame = compress(LZ4, DATA)
    mine = sd.decompress_transient(LZ4, frame, 1 << 26)
    theirs = []
    t = threading.Thread(target=lambda: theirs.append(sd.decompress_transient(LZ4, frame,
                                                                               1 << 26).obj))
    t.start()
    t.join()
    assert theirs[0] is not mine.obj


def test_a_larger_batch_replaces_the_buffer_and_a_huge_one_does_not_stay():
    small = sd.decompress_transient(LZ4, compress(LZ4, b"a" * 100), 1 << 26).obj
    big_data = DATA * 6                                    # > 1 MiB: outgrows the first buffer
    big = sd.decompress_transient(LZ4, compress(LZ4, big_data), 1 << 26)
    assert bytes(big) == big_data and big.obj is not small
    huge_data = b"z" * (sd.KEEP_BYTES + 1)
    huge = sd.decompress_transient(LZ4, compress(LZ4, huge_data), 1 << 26)
    assert bytes(huge) == huge_data
    after = sd.decompress_transient(LZ4, compress(LZ4, b"b" * 10), 1 << 26)
    assert after.obj is big.obj                            # the huge one was a one-off


@pytest.mark.parametrize("claimed_delta", [-1, +1])
def test_a_frame_whose_claimed_size_is_wrong_is_refused(claimed_delta):
    frame = with_content_size(compress(LZ4, DATA), len(DATA) + claimed_delta)
    with pytest.raises(DecodeError):
        sd.decompress_transient(LZ4, frame, 1 << 26)


def test_a_claim_beyond_what_the_bytes_can_hold_is_not_allocated(monkeypatch):
    frame = with_content_size(compress(LZ4, DATA), 2 ** 40)
    asked = []
    monkeypatch.setattr(sd, "_buffer", lambda n: asked.append(n) or bytearray(n))
    with pytest.raises(DecodeError):
        sd.decompress_transient(LZ4, frame, 2 ** 41)
    assert asked == []


def test_the_cap_still_applies():
    frame = compress(LZ4, DATA)
    with pytest.raises(DecodeError, match="exceeds the cap"):
        sd.decompress_transient(LZ4, frame, len(DATA) - 1)


def test_frames_without_a_content_size_and_several_frames_decode_as_decompress_does():
    plain = lz4.frame.compress(DATA, store_size=False)
    assert bytes(sd.decompress_transient(LZ4, plain, 1 << 26)) == DATA
    two = compress(LZ4, DATA) + compress(LZ4, b"tail")
    assert bytes(sd.decompress_transient(LZ4, two, 1 << 26)) == decompress(LZ4, two) \
        == DATA + b"tail"


def test_corrupt_lz4_is_a_decode_error():
    frame = bytearray(compress(LZ4, DATA))
    frame[40] ^= 0xFF
    with pytest.raises(DecodeError):
        sd.decompress_transient(LZ4, bytes(frame), 1 << 26)


@pytest.mark.parametrize("codec", [GZIP, ZSTD])
def test_other_codecs_go_through_decompress(codec):
    assert bytes(sd.decompress_transient(codec, compress(codec, DATA), 1 << 26)) == DATA


def java_style(data: bytes) -> bytes:
    """A frame as Kafka's Java producer writes it: 64 KiB independent blocks, no content size,
    no checksums."""
    return lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
                              store_size=False, content_checksum=False)


def test_a_frame_without_content_size_comes_back_from_the_threads_buffer():
    got = sd.decompress_transient(LZ4, java_style(DATA), 1 << 26)
    assert isinstance(got, memoryview) and got.readonly and bytes(got) == DATA
    again = sd.decompress_transient(LZ4, java_style(DATA[:1000]), 1 << 26)
    assert again.obj is got.obj and bytes(again) == DATA[:1000]


def test_a_sizeless_frame_larger_than_the_kept_buffer_still_decodes():
    huge = b"q" * (sd.KEEP_BYTES + 5)
    assert bytes(sd.decompress_transient(LZ4, java_style(huge), 1 << 26)) == huge


def test_a_sizeless_frame_is_bounded_by_the_cap_and_by_its_own_length(monkeypatch):
    with pytest.raises(DecodeError, match="exceeds the cap"):
        sd.decompress_transient(LZ4, java_style(DATA), len(DATA) - 1)
    frame = java_style(b"tiny")
    asked = []
    real = sd._buffer
    monkeypatch.setattr(sd, "_buffer", lambda n: asked.append(n) or real(n))
    assert bytes(sd.decompress_transient(LZ4, frame, 1 << 26)) == b"tiny"
    assert asked == [sd.LZ4_MAX_RATIO * len(frame)]


@pytest.mark.parametrize("damage", ["truncated", "block size"])
def test_a_damaged_sizeless_frame_is_a_decode_error(damage):
    frame = bytearray(java_style(DATA))
    if damage == "truncated":
        frame = frame[:-20]
    else:
        frame[7 + 3] ^= 0x40           # the first block's size (after a 7-byte header)
    with pytest.raises(DecodeError):
        sd.decompress_transient(LZ4, bytes(frame), 1 << 26)
