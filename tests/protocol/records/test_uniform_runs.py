"""uniform.plain_runs_valid may only accept what the general walk accepts, and must accept the
batches producers actually send (or it would be dead weight)."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gregor.protocol.primitives import encode_varint
from gregor.protocol.records import fields, uniform, validation
from gregor.protocol.records.batch import encode_batch
from gregor.protocol.records.errors import CorruptRecordsError, InvalidRecordsError
from gregor.protocol.records.header import HEADER_SIZE

REFUSALS = (CorruptRecordsError, InvalidRecordsError)


def producer_section(n, key=b"k" * 10, value=b"v" * 100, timestamps=None, headers=None):
    ts = timestamps or (lambda i: 1_700_000_000_000)
    recs = [(ts(i), key, value, headers(i) if headers else None) for i in range(n)]
    return encode_batch(recs)[HEADER_SIZE:]


def general(data, n, strict=True):
    """The general vector walk only (what the fast path must agree with)."""
    try:
        validation._walk_fields(data, n, n - 1, strict, fields.record_ends(data, n))
        return "ok"
    except REFUSALS as e:
        return str(e)


def loop(data, n):
    try:
        validation._walk_records_loop(data, n, n - 1, strict_offsets=True)
        return "ok"
    except REFUSALS:
        return "refused"


def proved(data, n):
    try:
        ends = fields.record_ends(data, n)
    except CorruptRecordsError:
        return False
    return uniform.plain_runs_valid(data, ends)


@pytest.mark.parametrize("n,key,value", [
    (256, b"k" * 10, b"v" * 100), (9000, b"k" * 10, b"v" * 100), (2000, None, b"x" * 7),
    (2000, b"key", None), (1000, b"", b""), (600, b"k" * 200, b"v" * 5000)])
def test_producer_batches_are_proved(n, key, value):
    data = producer_section(n, key, value)
    assert proved(data, n)
    assert general(data, n) == "ok"
    validation.walk_records(data, n, n - 1)


def test_timestamp_deltas_of_one_width_are_proved_and_mixed_widths_fall_back():
    n = 2000
    same_width = producer_section(n, timestamps=lambda i: 1_700_000_000_000 + i % 60)
    assert proved(same_width, n) and general(same_width, n) == "ok"
    mixed = producer_section(n, timestamps=lambda i: 1_700_000_000_000 + (i % 3) * 100)
    assert not proved(mixed, n)                 # sizes change every record: too many runs
    validation.walk_records(mixed, n, n - 1)    # valid all the same, via the general walk


def test_records_with_headers_are_left_to_the_general_walk():
    n = 1000
    data = producer_section(n, headers=lambda i: [("h", b"x")])
    assert not proved(data, n)
    assert general(data, n) == "ok"
    validation.walk_records(data, n, n - 1)


def test_an_overlong_varint_of_the_same_record_size_is_not_proved_but_accepted():
    # record 500 spells its key length 3 in two bytes and drops one value byte, so every
    # record keeps the same size but its fields sit at other columns
    n = 1000
    recs = []
    for i in range(n):
        key, value = b"abc", b"v" * (20 if i != 500 else 19)
        klen = encode_varint(3) if i != 500 else bytes([0x86, 0x00])
        body = (b"\0" + encode_varint(0) + encode_varint(i) + klen + key
                + encode_varint(len(value)) + value + b"\0")
        recs.append(encode_varint(len(body)) + body)
    data = b"".join(recs)
    assert len({len(r) for r in recs[64:]}) == 1
    assert not proved(data, n)
    assert general(data, n) == "ok" and loop(data, n) == "ok"


def test_offset_deltas_out_of_order_are_refused():
    n = 1000
    good = producer_section(n)
    ends = fields.record_ends(good, n).tolist()
    # record 700 claims offset delta 701 (same varint width, so the same record size)
    start = ends[699]
    buf = bytearray(good)
    delta_at = start + 2 + 1 + 1            # length varint (2), attributes, timestamp delta
    assert bytes(buf[delta_at:delta_at + 2]) == encode_varint(700)
    buf[delta_at:delta_at + 2] = encode_varint(701)
    data = bytes(buf)
    assert not proved(data, n)
    with pytest.raises(InvalidRecordsError, match="record 700 has offset delta 701"):
        validation.walk_records(data, n, n - 1)


def _check(data, n):
    """The fast path is sound, and the full vector walk agrees with the loop."""
    if proved(data, n):
        assert general(data, n) == "ok"
    try:
        validation._walk_records_vector(data, n, n - 1, True)
        vector = "ok"
    except REFUSALS:
        vector = "refused"
    assert vector == loop(data, n)
    return vector


def test_every_byte_of_chosen_records_damaged_alike():
    n = 600                          # two runs: offset deltas 0-63 and 64-599
    good = producer_section(n, key=b"abc", value=b"0123456789")
    assert proved(good, n)
    ends = [0] + fields.record_ends(good, n).tolist()
    refused = 0
    for rec in (0, 1, 63, 64, 65, 300, 598, 599):
        for pos in range(ends[rec], ends[rec + 1]):
            for value in {0x00, 0x01, 0x02, 0x7F, 0x80, 0x81, 0xFF, good[pos] ^ 0x04}:
                if value == good[pos]:
                    continue
                buf = bytearray(good)
                buf[pos] = value
                refused += _check(bytes(buf), n) != "ok"
    assert refused > 300          # most single-byte damage to the structure is caught


@settings(max_examples=60, deadline=None)
@given(st.integers(256, 3000), st.integers(0, 2**32), st.sampled_from([None, b"", b"k" * 9]),
       st.sampled_from([None, b"", b"v" * 100, b"w" * 300]), st.integers(0, 4))
def test_damaged_producer_batches_agree(n, seed, key, value, hits):
    rnd = random.Random(seed)
    buf = bytearray(producer_section(n, key, value))
    for _ in range(hits):
        buf[rnd.randrange(len(buf))] = rnd.getrandbits(8)
    _check(bytes(buf), n)
