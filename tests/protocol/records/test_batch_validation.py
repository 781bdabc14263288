"""The plain-loop and numpy paths (small / large batches) of validation and decoding must
accept and refuse the same bytes, and decode them the same."""
from __future__ import annotations

import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gregor.protocol.errors import CorruptMessageError, InvalidRecordError
from gregor.protocol.primitives import DecodeError
from gregor.protocol.records import batch as batch_module
from gregor.protocol.records import fields, validation
from gregor.protocol.records.batch import decode_batch, encode_batch, validate_batch
from gregor.protocol.records.header import CRC_OFFSET, HEADER_SIZE, compute_crc, parse_header

ALLOWED = (DecodeError, CorruptMessageError, InvalidRecordError)


def section(n, seed, headers_every=0, spread=10_000, sizes=(0, 1, 60, 200, 9000)):
    rnd = random.Random(seed)
    recs = [(rnd.randint(0, spread), None if rnd.random() < 0.2 else bytes(rnd.randint(0, 12)),
             None if rnd.random() < 0.1 else bytes(rnd.choice(sizes)),
             [("h", b"v" * (i % 3)), ("n", None)] if headers_every and i % headers_every == 0
             else None)
            for i in range(n)]
    return encode_batch(recs)[HEADER_SIZE:], recs


def outcome(fn, data, n, last, strict):
    try:
        fn(data, n, last, strict_offsets=strict) if fn is validation._walk_records_loop \
            else fn(data, n, last, strict)
        return "ok"
    except ALLOWED as e:
        return type(e).__mro__[1].__name__     # CorruptMessageError / InvalidRecordError


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 700), st.integers(0, 2**32), st.sampled_from([0, 1, 7]),
       st.sampled_from([0, 100, 10**7, 10**12]))
def test_both_walks_accept_every_well_formed_section(n, seed, headers_every, spread):
    data, _ = section(n, seed, headers_every, spread)
    for strict in (True, False):
        validation._walk_records_loop(data, n, n - 1, strict_offsets=strict)
        validation._walk_records_vector(data, n, n - 1, strict)


@pytest.mark.parametrize("headers_every", [0, 5])
def test_both_walks_agree_on_damaged_sections(headers_every):
    n = 300
    good, _ = section(n, 7, headers_every, sizes=(0, 1, 3))   # mostly structure, little payload
    rnd = random.Random(headers_every)
    refused = 0
    for _ in range(600):
        buf = bytearray(good)
        for _ in range(rnd.randint(1, 3)):
            buf[rnd.randrange(len(buf))] = rnd.getrandbits(8)
        data = bytes(buf)
        for strict in (True, False):
            a = outcome(validation._walk_records_loop, data, n, n - 1, strict)
            b = outcome(validation._walk_records_vector, data, n, n - 1, strict)
            # both accept, or both refuse (with several faults in one batch, the one each
            # walk meets first, and so the error class, may differ)
            assert (a == "ok") == (b == "ok"), (a, b)
            refused += a != "ok"
    assert refused > 200          # the damage mostly matters, so the comparison means something


def test_both_walks_agree_on_truncated_and_padded_sections():
    n = 300
    good, _ = section(n, 3)
    cuts = range(0, len(good), max(1, len(good) // 50))
    for data in [good[:cut] for cut in cuts] + [good + b"\0", good + b"x" * 9]:
        for strict in (True, False):
            assert outcome(validation._walk_records_loop, data, n, n - 1, strict) != "ok"
            assert outcome(validation._walk_records_vector, data, n, n - 1, strict) != "ok"


def test_large_batch_validation_uses_the_vector_walk_and_decodes():
    n = fields.VECTOR_MIN_RECORDS * 4
    recs = [(1000 + i * 11, b"k%d" % i, b"v" * (i % 300), [("i", b"%d" % i)] if i % 97 == 0
             else None) for i in range(n)]
    for codec in (0, 3):
        data = encode_batch(recs, compression=codec, producer_id=1, producer_epoch=0,
                            base_sequence=0)
        assert validate_batch(data, from_client=True).records_count == n
        assert len(decode_batch(data).records) == n


def test_vector_walk_offset_rules():
    n = 300
    data, _ = section(n, 11)
    validation._walk_records_vector(data, n, n + 50, False)      # gaps allowed below the last
    with pytest.raises(InvalidRecordError):
        validation._walk_records_vector(data, n, n - 2, False)   # past last_offset_delta
    with pytest.raises(CorruptMessageError):
        validation._walk_records_vector(data, n + 1, n, True)    # a record missing


# --- decoding: the numpy path equals the loop ---------------------------------------------------

def _decoded(fn, data, h):
    try:
        return [(r.offset, r.timestamp, r.key, r.value, r.headers, r.timestamp_type)
                for r in fn(data, h)]
    except ALLOWED:
        return "refused"


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 600), st.integers(0, 2**32), st.sampled_from([0, 1, 9]),
       st.sampled_from([0, 10**4, 10**12, 2**62]), st.booleans())
def test_vector_decode_equals_loop_decode(n, seed, headers_every, spread, log_append_time):
    rnd = random.Random(seed)
    recs = [(rnd.randint(-spread, spread),
             None if rnd.random() < 0.2 else bytes(rnd.randint(0, 12)),
             None if rnd.random() < 0.1 else rnd.randbytes(rnd.choice([0, 1, 60, 300])),
             [("h", b"v"), ("n", None)] if headers_every and i % headers_every == 0 else None)
            for i in range(n)]
    data = encode_batch(recs, base_offset=rnd.randint(0, 2**40),
                        log_append_time=log_append_time)
    h = parse_header(data)
    body = data[HEADER_SIZE:]
    loop = _decoded(batch_module._decode_records_loop, body, h)
    assert loop != "refused"
    assert _decoded(batch_module._decode_records_vector, body, h) == loop


def test_vector_decode_and_loop_decode_agree_on_damaged_sections():
    n = 300
    data = encode_batch([(1000 + i, b"k", bytes(i % 4), [("h", b"x")] if i % 50 == 0 else None)
                         for i in range(n)])
    h = parse_header(data)
    good = data[HEADER_SIZE:]
    rnd = random.Random(1)
    refused = 0
    for _ in range(400):
        buf = bytearray(good)
        buf[rnd.randrange(len(buf))] = rnd.getrandbits(8)
        a = _decoded(batch_module._decode_records_loop, bytes(buf), h)
        b = _decoded(batch_module._decode_records_vector, bytes(buf), h)
        assert (a == "refused") == (b == "refused")
        if a != "refused":
            assert a == b
        refused += a == "refused"
    assert refused > 100


# --- a batch given as a memoryview (the broker's produce path) is judged like bytes ---------

def _validated(buf):
    try:
        return validate_batch(buf, from_client=True).records_count
    except ALLOWED as e:
        return f"{type(e).__name__}: {e}"


@pytest.mark.parametrize("shape", ["uniform", "mixed", "headers", "compressed"])
def test_memoryview_batches_are_validated_like_bytes(shape):
    n = 700
    rnd = random.Random(len(shape))
    recs = [(1000 + (0 if shape == "uniform" else rnd.randint(0, 5000)),
             b"k" * (10 if shape == "uniform" else rnd.randint(0, 12)),
             b"v" * (100 if shape == "uniform" else rnd.randint(0, 200)),
             [("h", b"x")] if shape == "headers" and i % 7 == 0 else None)
            for i in range(n)]
    good = encode_batch(recs, compression=3 if shape == "compressed" else 0)
    outcomes = set()
    for trial in range(150):
        buf = bytearray(good)
        if trial:
            pos = rnd.randrange(HEADER_SIZE, len(buf))
            buf[pos] = rnd.getrandbits(8)
            # keep the CRC right, so the damage reaches the record walk
            struct.pack_into(">I", buf, CRC_OFFSET, compute_crc(buf, 0, len(buf)))
        framed = b"\0" * 5 + bytes(buf)          # a view into a larger frame, as the broker has
        a = _validated(bytes(buf))
        b = _validated(memoryview(framed)[5:])
        assert a == b
        outcomes.add(a == n)
    assert outcomes == {True, False}             # both accepted and refused batches were seen
