"""record_ends (which skips over runs of same-size records with numpy) must accept and refuse
exactly what the plain loop does, with the same ends and the same messages."""
from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gregor.protocol.primitives import encode_varint
from gregor.protocol.records import fields
from gregor.protocol.records.batch import encode_batch
from gregor.protocol.records.errors import CorruptRecordsError
from gregor.protocol.records.header import HEADER_SIZE


def outcome(fn, data, count):
    try:
        return "ok", [int(x) for x in fn(data, count)]
    except CorruptRecordsError as e:
        return "refused", str(e)


def overlong(n: int) -> bytes:
    """A valid but non-canonical varint for n >= 0 (one byte longer than needed)."""
    z = 2 * n
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out += bytes([z | 0x80, 0])
    return bytes(out)


def records(rnd: random.Random, n: int, shape: str) -> bytes:
    """n fake records (a length varint and that many bytes) whose sizes follow `shape`."""
    out = []
    size = rnd.choice([0, 1, 50, 63, 64, 118, 8191, 8192])
    for i in range(n):
        if shape == "mixed":
            size = rnd.randint(0, 300)
        elif shape == "runs" and rnd.random() < 0.02:
            size = rnd.choice([0, 1, 50, 63, 64, 118, 300])
        elif shape == "alternating":
            size = 50 + i % 2
        body = bytes([rnd.getrandbits(8) for _ in range(min(size, 4))]) + bytes(max(0, size - 4))
        head = overlong(size) if rnd.random() < 0.01 else encode_varint(size)
        out.append(head + body)
    return b"".join(out)


def damage(rnd: random.Random, data: bytes) -> bytes:
    kind = rnd.random()
    if kind < 0.35 and data:
        buf = bytearray(data)
        for _ in range(rnd.randint(1, 3)):
            buf[rnd.randrange(len(buf))] = rnd.getrandbits(8)
        return bytes(buf)
    if kind < 0.5:
        return data[:rnd.randrange(len(data) + 1)]
    if kind < 0.6:
        return data + bytes(rnd.randint(1, 5))
    return data


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 900), st.integers(0, 2**32),
       st.sampled_from(["uniform", "runs", "mixed", "alternating"]),
       st.sampled_from([0, 0, 0, -1, 1]))
def test_record_ends_equals_the_loop(n, seed, shape, count_error):
    rnd = random.Random(seed)
    data = damage(rnd, records(rnd, n, shape))
    count = n + count_error
    assert outcome(fields.record_ends, data, count) == \
        outcome(fields.record_ends_loop, data, count)


def test_every_single_byte_change_in_a_uniform_section_agrees():
    rnd = random.Random(5)
    good = records(rnd, 600, "uniform")
    row = len(good) // 600
    for pos in list(range(0, 3 * row)) + list(range(len(good) - 2 * row, len(good))):
        for value in (0x00, 0x01, 0x7F, 0x80, 0xFF, good[pos] ^ 0x02):
            buf = bytearray(good)
            buf[pos] = value
            data = bytes(buf)
            assert outcome(fields.record_ends, data, 600) == \
                outcome(fields.record_ends_loop, data, 600), (pos, value)


def test_a_producer_batch_is_followed_in_a_few_runs():
    n = 9000       # offset deltas cross 64 and 8192: three record sizes
    data = encode_batch([(1000, b"%010d" % i, b"v" * 100) for i in range(n)])[HEADER_SIZE:]
    ends = fields.record_ends(data, n)
    assert isinstance(ends, np.ndarray) and ends.dtype == np.int64
    assert ends.tolist() == fields.record_ends_loop(data, n)
    assert len(np.unique(np.diff(ends))) == 3


def test_counts_that_do_not_match_are_refused_alike():
    data = records(random.Random(2), 500, "uniform")
    for count in (0, 1, 499, 501, 10_000):
        assert outcome(fields.record_ends, data, count) == \
            outcome(fields.record_ends_loop, data, count)
        assert outcome(fields.record_ends, data, count)[0] == "refused"
