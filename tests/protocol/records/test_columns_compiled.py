"""The ahead-of-time compiled column loops (_columns.pyx) against their numba reference
(kernels_numba.py), on the same inputs: the same records section, sizes, gathered rows and
partitions, bit for bit (nulls, slices, empty items, lengths that need 2- and 3-byte varints,
timestamps far from the base)."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from gregor.compiled import load
from gregor.protocol.records import kernels_numba
from gregor.protocol.records.kernels import Column, kernel_args

compiled = load("gregor.protocol.records._columns")
needs_compiled = pytest.mark.skipif(compiled is None,
                                    reason="GREGOR_PURE_PYTHON=1: the numba loops are under test")

maybe_bytes = st.one_of(st.none(), st.binary(max_size=40),
                        st.integers(8180, 8200).map(lambda n: b"\x07" * n))


def test_the_compiled_loops_are_built_unless_told_not_to_use_them():
    """`make venv` compiles them; a broken build must fail here, not just run slower."""
    if os.environ.get("GREGOR_PURE_PYTHON"):
        assert compiled is None
    else:
        assert compiled is not None, "gregor.protocol.records._columns was not built"


def columns(items, cut):
    pad = [b"pad"] * cut
    arr = pa.array(pad + items + pad, pa.binary()).slice(cut, len(items))
    return Column.from_arrow(arr)


@needs_compiled
@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(maybe_bytes, maybe_bytes, st.integers(-2**50, 2**50)),
                min_size=1, max_size=40),
       st.integers(0, 3), st.randoms(use_true_random=False))
def test_encode_and_size_match_numba(rows, cut, rnd):
    kc = columns([k for k, _, _ in rows], cut)
    vc = columns([v for _, v, _ in rows], cut)
    n = len(rows)
    sel = np.array(sorted(rnd.sample(range(n), rnd.randint(1, n))), dtype=np.int64)
    tdelta = np.array([t for _, _, t in rows], dtype=np.int64)[:len(sel)]
    args = kernel_args(kc.offsets, kc.data, kc.valid, vc.offsets, vc.data, vc.valid, sel, tdelta)
    ko, kd, kv, vo, vd, vv, sel, tdelta = args
    size = kernels_numba.records_size(ko, kv, vo, vv, sel, tdelta)
    assert compiled.records_size(ko, kv.view(np.uint8), vo, vv.view(np.uint8), sel,
                                 tdelta) == size
    want = np.zeros(size, dtype=np.uint8)
    got = np.zeros(size, dtype=np.uint8)
    assert kernels_numba.encode_columns(*args, want) == size
    assert compiled.encode_columns(ko, kd, kv.view(np.uint8), vo, vd, vv.view(np.uint8), sel,
                                   tdelta, got) == size
    assert got.tobytes() == want.tobytes()


@needs_compiled
@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=30), min_size=1, max_size=50), st.integers(0, 3),
       st.integers(0, 5), st.randoms(use_true_random=False))
def test_append_rows_matches_numba(items, cut, already, rnd):
    col = columns(items, cut)
    rows = np.array([rnd.randrange(len(items)) for _ in range(rnd.randint(0, 60))],
                    dtype=np.int64)
    so, sd = kernel_args(col.offsets, col.data)
    out = {}
    for name, fn in (("numba", kernels_numba.append_rows), ("compiled", compiled.append_rows)):
        offs = np.zeros(already + len(rows) + 1, dtype=np.int32)
        offs[:already + 1] = np.arange(already + 1) * 2          # items already there
        data = np.full(2 * already + sum(len(items[i]) for i in rows) + 1, 0xEE, np.uint8)
        end = fn(so, sd, rows, offs, data, already)
        out[name] = (end, offs.tobytes(), data.tobytes())
    assert out["compiled"] == out["numba"]
    end, offs, data = out["compiled"]
    assert data[2 * already:end] == b"".join(items[i] for i in rows)


@needs_compiled
@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=30), min_size=1, max_size=50), st.integers(1, 1000))
def test_murmur2_matches_numba_and_java(keys, partitions):
    from kafka.partitioner.default import murmur2      # written independently (kafka-python)
    col = Column.from_arrow(pa.array(keys, pa.binary()))
    o, d = kernel_args(col.offsets, col.data)
    want = np.empty(len(keys), np.int64)
    kernels_numba.murmur2_partitions(o, d, partitions, want)
    got = np.empty(len(keys), np.int64)
    compiled.murmur2_partitions(o, d, partitions, got)
    assert got.tolist() == want.tolist() == [(murmur2(k) & 0x7FFFFFFF) % partitions
                                              for k in keys]
