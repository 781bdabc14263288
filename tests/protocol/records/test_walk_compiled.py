"""The compiled record walk may only prove what the Python walk accepts, and must prove the
well-formed batches producers send (else it would only add cost)."""
from __future__ import annotations

import random
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gregor.protocol.records import validation
from gregor.protocol.records.batch import encode_batch
from gregor.protocol.records.errors import CorruptRecordsError, InvalidRecordsError
from gregor.protocol.records.header import HEADER_SIZE
from gregor.protocol.records.walk_compiled import NOT_PROVED, VALID, walk

REFUSALS = (CorruptRecordsError, InvalidRecordsError)


def python_walk(data, n, last, strict):
    """The reference: the plain loop (it and the numpy walks agree: test_batch_validation)."""
    try:
        validation._walk_records_loop(data, n, last, strict_offsets=strict)
        return True
    except REFUSALS:
        return False


def compiled(data, n, last, strict):
    return walk(np.frombuffer(data, dtype=np.uint8), n, last, strict)


def section(rnd, n, shape):
    recs = []
    for i in range(n):
        if shape == "uniform":
            key, value, headers = b"k" * 10, b"v" * 100, None
        else:
            key = None if rnd.random() < 0.1 else rnd.randbytes(rnd.randint(0, 20))
            value = None if rnd.random() < 0.1 else rnd.randbytes(rnd.choice([0, 1, 60, 300]))
            headers = ([("h", b"x"), ("n", None), ("", b"")] if shape == "headers"
                       and i % 3 == 0 else None)
        recs.append((rnd.randint(0, 10**6) if shape != "uniform" else 5, key, value, headers))
    return encode_batch(recs)[HEADER_SIZE:]


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 1500), st.integers(0, 2**32),
       st.sampled_from(["uniform", "mixed", "headers"]), st.integers(0, 4), st.booleans(),
       st.sampled_from([0, 0, 1, -1, 50]))
def test_compiled_walk_proves_only_what_python_accepts(n, seed, shape, hits, strict, slack):
    rnd = random.Random(seed)
    buf = bytearray(section(rnd, n, shape))
    for _ in range(hits):
        buf[rnd.randrange(len(buf))] = rnd.getrandbits(8)
    data = bytes(buf)
    last = n - 1 + slack
    accepted = python_walk(data, n, last, strict)
    verdict = compiled(data, n, last, strict)
    assert verdict in (VALID, NOT_PROVED)
    assert (verdict == VALID) == accepted       # sound, and complete on ASCII header keys


def test_every_single_byte_change_is_judged_alike():
    rnd = random.Random(3)
    n = 40
    good = section(rnd, n, "headers")
    seen = set()
    for pos in range(len(good)):
        for value in (0x00, 0x01, 0x7F, 0x80, 0xFF, good[pos] ^ 0x01, good[pos] ^ 0x02):
            buf = bytearray(good)
            buf[pos] = value
            data = bytes(buf)
            for strict in (True, False):
                accepted = python_walk(data, n, n - 1, strict)
                assert (compiled(data, n, n - 1, strict) == VALID) == accepted, (pos, value)
                seen.add(accepted)
    assert seen == {True, False}


def test_counts_and_sizes_that_do_not_match_are_not_proved():
    rnd = random.Random(9)
    for shape in ("uniform", "mixed", "headers"):
        n = 300
        good = section(rnd, n, shape)
        assert compiled(good, n, n - 1, True) == VALID
        for data, count in ((good, n - 1), (good, n + 1), (good + b"\0", n),
                            (good[:-1], n), (good[:len(good) // 2], n)):
            for strict in (True, False):
                assert not python_walk(data, count, count - 1, strict)
                assert compiled(data, count, count - 1, strict) == NOT_PROVED


def test_non_ascii_header_keys_are_left_to_python():
    ok = encode_batch([(1, b"k", b"v", [("schlüssel", b"x")])] * 1)[HEADER_SIZE:]
    assert compiled(ok, 1, 0, True) == NOT_PROVED
    assert python_walk(ok, 1, 0, True)
    bad = ok.replace("schlüssel".encode(), b"schl\xff\xfessel")
    assert compiled(bad, 1, 0, True) == NOT_PROVED
    assert not python_walk(bad, 1, 0, True)     # invalid UTF-8: Python refuses it


def _first_delta_one(good: bytes) -> bytes:
    """Record 0 claims offset delta 1 (same varint width, so the same record size)."""
    p = 2 if good[0] >= 0x80 else 1               # length varint
    p += 1                                        # attributes
    while good[p] >= 0x80:                        # timestamp delta
        p += 1
    p += 1
    assert good[p] == 0
    return good[:p] + b"\x02" + good[p + 1:]       # zig-zag of 1


def test_walk_records_uses_it_and_keeps_the_python_errors(monkeypatch):
    assert validation.load_compiled_walk()
    calls = []
    real = validation._compiled_walk
    monkeypatch.setattr(validation, "_compiled_walk",
                        lambda *a: calls.append(a[1]) or real(*a))
    n = 1000
    good = section(random.Random(1), n, "mixed")
    validation.walk_records(good, n, n - 1)
    assert calls == [n]
    with pytest.raises(InvalidRecordsError, match="record 0 has offset delta 1; expected 0"):
        validation.walk_records(_first_delta_one(good), n, n - 1)
    assert calls == [n, n]


def test_a_fresh_process_loads_it_in_the_background_at_the_first_large_batch():
    code = textwrap.dedent("""
        import time
        from gregor.protocol.records import validation
        from gregor.protocol.records.batch import encode_batch, validate_batch
        batch = encode_batch([(1, b"k", b"v" * 10, None)] * 300)
        small = encode_batch([(1, b"k", b"v", None)] * 3)
        validate_batch(small, from_client=True)
        assert validation._compiled_state == "not loaded"   # small batches do not load it
        validate_batch(batch, from_client=True)              # walked in Python, starts the load
        deadline = time.monotonic() + 60
        while validation._compiled_state == "loading" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert validation._compiled_state == "loaded", validation._compiled_state
        validate_batch(batch, from_client=True)
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "ok", out.stderr
