"""The Arrow records encoder (send_batch's kernel): one pass, as it was, vs two passes now.

    .venv/bin/python benchmarks/bench_encode_kernel.py [--records 9000] [--value-bytes 100]

The one-pass kernel wrote each record's varints and then copied its key and value bytes
(numba's slice assignment, byte by byte); the current kernel (records/kernels_numba.py)
writes every record's varints first, noting where the bytes go, then copies them with
memcpy; the ahead-of-time compiled one (records/_columns.pyx, what runs when it is built)
does the same in C, in blocks of 256 records. All encode the same ~1 MiB batch (10-byte
keys, --value-bytes values), all rows in order and rows scattered over 4 partitions (as keys
hash them); a numpy copy of the values buffer is the floor. Prints ns per record (best of
several rounds, CPU time) and the ratios.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import pyarrow as pa
from numba import njit

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from gregor.protocol.records import kernels as K  # noqa: E402
from gregor.protocol.records import kernels_numba as KN  # noqa: E402
from gregor.protocol.records.kernels_numba import (  # noqa: E402
    _put_varint,
    _record_body_size,
    _span,
)


@njit(nogil=True, inline="always")
def _put_field_one_pass(out, p, data, start, length):
    p = _put_varint(out, p, length)
    if length > 0:
        out[p:p + length] = data[start:start + length]
        p += length
    return p


@njit(nogil=True)
def encode_one_pass(koffs, kdata, kvalid, voffs, vdata, vvalid, rows, tdelta, out):
    """The kernel before two passes, kept here as the baseline."""
    p = 0
    for j in range(len(rows)):
        i = rows[j]
        ka, kl = _span(koffs, kvalid, i)
        va, vl = _span(voffs, vvalid, i)
        td = tdelta[j]
        body = _record_body_size(kl, vl, td, j)
        p = _put_varint(out, p, body)
        out[p] = 0
        p = _put_varint(out, p + 1, td)
        p = _put_varint(out, p, j)
        p = _put_field_one_pass(out, p, kdata, ka, kl)
        p = _put_field_one_pass(out, p, vdata, va, vl)
        out[p] = 0
        p += 1
    return p


def best_ns(fn, n, reps=200, rounds=5):
    fn()
    best = float("inf")
    for _ in range(rounds):
        t = time.process_time()
        for _ in range(reps):
            fn()
        best = min(best, (time.process_time() - t) / reps)
    return best / n * 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=9000)
    ap.add_argument("--value-bytes", type=int, default=100)
    args = ap.parse_args()
    n = args.records
    pad = b"x" * max(0, args.value_bytes - 20)
    keys = pa.array([b"key-%06d" % (i % 10000) for i in range(n)], pa.binary())
    values = pa.array([b"%020d" % i + pad for i in range(n)], pa.binary())
    kc, vc = K.Column.from_arrow(keys), K.Column.from_arrow(values)
    tdelta = np.zeros(n, dtype=np.int64)
    in_order = np.arange(n, dtype=np.int64)
    # rows of one of 4 partitions, then the next: what grouping by key hash hands the kernel
    scattered = np.argsort(np.random.default_rng(1).integers(0, 4, n), kind="stable")
    print(f"{n:,} records, 10 B keys, {args.value_bytes} B values (ns per record, CPU time)")
    for label, rows in (("rows in order", in_order), ("rows scattered", scattered)):
        a = K.kernel_args(kc.offsets, kc.data, kc.valid, vc.offsets, vc.data, vc.valid,
                          rows.astype(np.int64), tdelta)
        size = KN.records_size(a[0], a[2], a[3], a[5], a[6], a[7])
        old_out, new_out = np.empty(size, np.uint8), np.empty(size, np.uint8)
        old = best_ns(lambda: encode_one_pass(*a, old_out), n)
        new = best_ns(lambda: KN.encode_columns(*a, new_out), n)
        assert old_out.tobytes() == new_out.tobytes(), "the two kernels disagree"
        line = (f"  {label:<15} one pass {old:6.1f}   two passes {new:6.1f}   "
                f"two/one {new / old:4.2f}x")
        if K._compiled is not None:
            c_out = np.empty(size, np.uint8)
            c = best_ns(lambda: K.encode_columns(*a, c_out), n)
            assert c_out.tobytes() == new_out.tobytes(), "the compiled kernel disagrees"
            line += f"   compiled (C) {c:6.1f}"
        print(line)
    src = np.frombuffer(values.buffers()[2], np.uint8)
    dst = np.empty_like(src)
    print(f"  floor: numpy copy of the values buffer {best_ns(lambda: np.copyto(dst, src), n):.1f}")


if __name__ == "__main__":
    main()
