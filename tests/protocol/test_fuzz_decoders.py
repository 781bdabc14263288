"""Hostile bytes: the decoders must answer anything with a DecodeError, quickly and without
allocating more than the input justifies.

Valid messages are generated from the descriptions, then truncated, bit-flipped, spliced, and
salted with hostile lengths (negative, huge, overlong varints); plus purely random frames.
Every request decoder and every response decoder sees them; the only exception allowed is
DecodeError.
"""
from __future__ import annotations

import random
import struct
import tracemalloc

import pytest

from gregor.protocol import messages
from gregor.protocol.header import decode_request, decode_response, encode_request
from gregor.protocol.primitives import DecodeError

from tests.protocol.schema_data import all_codecs, codec_id, random_message

_APIS = sorted(messages.APIS.values(), key=lambda a: a.key)
_CODECS = all_codecs()

# Byte patterns that make a length, count or varint hostile wherever they land.
_HOSTILE = [b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", b"\xff\xfe",
            b"\x7f\xff", b"\xff" * 6, b"\x80" * 11, b"\xff\xff\xff\xff\x0f", b"\x00" * 4]


def _mutate(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    kind = rng.randrange(7)
    if kind == 0 and b:  # truncate
        return bytes(b[:rng.randrange(len(b))])
    if kind == 1 and b:  # flip a few bits
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        return bytes(b)
    if kind == 2:  # overwrite with a hostile pattern
        pat = rng.choice(_HOSTILE)
        pos = rng.randrange(len(b) + 1)
        b[pos:pos + len(pat)] = pat
        return bytes(b)
    if kind == 3:  # insert a hostile pattern
        pos = rng.randrange(len(b) + 1)
        return bytes(b[:pos] + rng.choice(_HOSTILE) + b[pos:])
    if kind == 4 and b:  # delete a slice
        i = rng.randrange(len(b))
        return bytes(b[:i] + b[i + rng.randint(1, 8):])
    if kind == 5 and b:  # duplicate a slice
        i = rng.randrange(len(b))
        j = min(len(b), i + rng.randint(1, 16))
        return bytes(b[:j] + b[i:j] + b[j:])
    return bytes(b) + rng.randbytes(rng.randint(1, 8))  # trailing garbage


def _only_decode_errors(fn, data) -> bool:
    """True when fn decoded data, False when it raised DecodeError; anything else fails."""
    try:
        fn(data)
    except DecodeError:
        return False
    return True


@pytest.mark.timeout(120)
def test_mutated_request_frames_only_raise_decode_error():
    rng = random.Random(20261122)
    tried = rejected = 0
    for api in _APIS:
        for v in range(api.valid[0], api.valid[1] + 1):
            for _ in range(3):
                body = random_message(api.request, v, rng)
                frame = encode_request(api, v, rng.randrange(1 << 31), "fuzz", body)[4:]
                assert _only_decode_errors(lambda d: decode_request(api, d), frame)
                for _ in range(30):
                    tried += 1
                    rejected += not _only_decode_errors(lambda d: decode_request(api, d),
                                                        _mutate(frame, rng))
    assert tried > 5000
    assert rejected > tried // 2  # most mutations must be noticed, not silently accepted


@pytest.mark.timeout(120)
def test_mutated_bodies_only_raise_decode_error_in_every_decoder():
    rng = random.Random(7)
    tried = 0
    for api, v, which in _CODECS:
        fields = api.request if which == "request" else api.response
        codec = api.request_codec(v) if which == "request" else api.response_codec(v)
        wire = codec.encode(random_message(fields, v, rng))
        for _ in range(10):
            tried += 1
            _only_decode_errors(codec.decode, _mutate(wire, rng))
    assert tried >= 3000


@pytest.mark.timeout(120)
def test_random_frames_only_raise_decode_error():
    rng = random.Random(99)
    for i in range(10000):
        api = _APIS[i % len(_APIS)]
        v = rng.randint(api.valid[0], api.valid[1])
        junk = rng.randbytes(rng.randint(0, 64))
        frame = struct.pack(">hhi", api.key, v, i) + junk
        _only_decode_errors(lambda d: decode_request(api, d), frame)
        _only_decode_errors(api.response_codec(v).decode, junk)
        _only_decode_errors(lambda d: decode_response(api, v, d), junk)


@pytest.mark.parametrize("item", _CODECS, ids=[codec_id(c) for c in _CODECS])
def test_every_truncation_is_a_decode_error(item):
    """Decoding is prefix-deterministic, so every strict prefix of a message must fail."""
    api, v, which = item
    fields = api.request if which == "request" else api.response
    codec = api.request_codec(v) if which == "request" else api.response_codec(v)
    wire = codec.encode(random_message(fields, v, random.Random(v)))
    for cut in range(len(wire)):
        with pytest.raises(DecodeError):
            codec.decode(wire[:cut])


# -- specific hostile values ------------------------------------------------------------------

METADATA = messages.api("Metadata")
PRODUCE = messages.api("Produce")
FETCH = messages.api("Fetch")


def test_negative_string_length():
    # Heartbeat v0: group_id string with length -2
    with pytest.raises(DecodeError, match="length"):
        messages.api("Heartbeat").request_codec(0).decode(b"\xff\xfe" + b"\x00" * 12)


def test_huge_bytes_length_in_produce():
    body = (struct.pack(">hi", 1, 1000) + struct.pack(">i", 1) + b"\x00\x01t"
            + struct.pack(">i", 1) + struct.pack(">i", 0) + struct.pack(">i", 0x7FFFFFF0))
    with pytest.raises(DecodeError):
        PRODUCE.request_codec(2).decode(body)


def test_absurd_array_count_in_metadata():
    with pytest.raises(DecodeError, match="cannot fit"):
        METADATA.request_codec(1).decode(struct.pack(">i", 0x7FFFFFFF) + b"\x00" * 32)
    with pytest.raises(DecodeError, match="cannot fit"):  # compact: count+1 as a varint
        METADATA.request_codec(9).decode(b"\xff\xff\xff\xff\x07" + b"\x00" * 32)


def test_overlong_varint_in_a_flexible_message():
    with pytest.raises(DecodeError, match="longer than"):
        METADATA.request_codec(12).decode(b"\x80" * 12)


def test_negative_array_count_other_than_null():
    with pytest.raises(DecodeError):
        METADATA.request_codec(4).decode(struct.pack(">i", -2) + b"\x01")


def test_null_where_not_nullable():
    # Metadata v0 topics is not nullable (v1+ is)
    with pytest.raises(DecodeError):
        METADATA.request_codec(0).decode(struct.pack(">i", -1))
    assert METADATA.request_codec(1).decode(struct.pack(">i", -1))["topics"] is None


def test_memory_stays_proportional_to_the_input():
    """Hostile counts and lengths never make the decoder allocate beyond what the bytes carry.

    Python objects are bigger than their wire form (a 4-byte int32 becomes a 28-byte int plus
    an 8-byte list slot), so the bound is a multiple of the input, not the input itself.
    """
    fetch12 = FETCH.request_codec(12)
    hostile = [
        # arrays that claim 2^31 elements followed by 64 KiB of filler
        struct.pack(">i", 0x7FFFFFFF) + b"\x00" * 65536,
        # bytes claiming 2 GiB
        struct.pack(">hi", 1, 0) + struct.pack(">i", 1) + b"\x00\x01t" + struct.pack(">i", 1)
        + struct.pack(">ii", 0, 0x7FFFFFFF) + b"\x00" * 65536,
        # compact array claiming 2^32 elements
        b"\xff\xff\xff\xff\x0f" + b"\x00" * 65536,
    ]
    decoders = [METADATA.request_codec(1).decode, PRODUCE.request_codec(2).decode,
                METADATA.request_codec(9).decode, fetch12.decode]
    # a legitimately large message: a Fetch with 20,000 partitions
    big = {"max_wait_ms": 1, "min_bytes": 1, "topics": [
        {"topic_id": bytes(16), "partitions": [{"partition": i} for i in range(20000)]}]}
    big_wire = FETCH.request_codec(13).encode(big)
    tracemalloc.start()
    try:
        for data in hostile:
            for decode in decoders:
                tracemalloc.reset_peak()
                base = tracemalloc.get_traced_memory()[0]
                try:
                    decode(data)
                except DecodeError:
                    pass
                peak = tracemalloc.get_traced_memory()[1] - base
                assert peak < 64 * len(data) + (1 << 20), (decode, peak)
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        FETCH.request_codec(13).decode(big_wire)
        peak = tracemalloc.get_traced_memory()[1] - base
        assert peak < 64 * len(big_wire) + (1 << 20)
    finally:
        tracemalloc.stop()
