"""Decompressing into a reused per-thread buffer, for callers that only read the records
before their next call on the same thread (the broker checking a produced batch).

Why: a fresh multi-MiB output per batch means fresh pages from the kernel each time, and
on these machines the page faults, not the decompression, were the cost: broker CPU per
record of an lz4 batch 130 ns with a fresh buffer, 30-40 ns with this one
(benchmarks/bench_broker_cpu.py --loads raw-1p-lz4, the two trees side by side).

Only LZ4 takes this path. A frame that states its content size (gregor's producer writes
it) is decompressed into exactly that much of the buffer; a frame without it (Kafka's Java
producer and librdkafka write none) into the whole kept buffer, and one that does not fit
there is decompressed again by compression.decompress, as are the other codecs.
"""
from __future__ import annotations

import struct
import threading

import cramjam

from .compression import LZ4, decompress

# The buffer a thread keeps between calls; a batch that inflates beyond it gets a one-off
# buffer instead (gregor's compressed bulk batches hold at most 8 MiB of records).
KEEP_BYTES = 8 << 20
# An LZ4 sequence turns a byte of input into at most 255 bytes of output: a frame claiming
# more than that of its own size is corrupt, and its claim is not allocated.
LZ4_MAX_RATIO = 255

_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_local = threading.local()


def decompress_transient(codec: int, data, max_size: int):
    """The decompressed bytes of data, valid until this thread's next call: a read-only
    memoryview into the thread's buffer when the fast path applies, else bytes (with the
    errors and bounds of compression.decompress)."""
    if codec == LZ4 and len(data) >= 7 and bytes(data[:4]) == _LZ4_MAGIC:
        claimed = _lz4_content_size(data)
        bound = min(max_size, LZ4_MAX_RATIO * len(data))
        if claimed is None or claimed <= bound:
            # Without a stated size, the kept buffer (bounded as a claim would be): a frame
            # that needs more fails here ("failed to write whole buffer").
            out = _buffer(min(KEEP_BYTES, bound) if claimed is None else claimed)
            try:
                n = cramjam.lz4.decompress_into(data, out)
                if claimed is None or n == claimed:
                    return out[:n].toreadonly()
            except cramjam.DecompressionError:
                pass    # the bounded decoder below names what is wrong with it
    return decompress(codec, data, max_size)


def _lz4_content_size(data) -> int | None:
    """The content size an LZ4 frame's header states, or None (no such field)."""
    if len(data) < 15 or not data[4] & 0x08:
        return None
    return struct.unpack_from("<Q", data, 6)[0]


def _buffer(n: int) -> memoryview:
    if n > KEEP_BYTES:
        return memoryview(bytearray(n))
    buf = getattr(_local, "buf", None)
    if buf is None or len(buf) < n:
        # replaced, never resized: a view handed out earlier may still be alive
        buf = _local.buf = bytearray(max(n, 1 << 20))
    return memoryview(buf)[:n]
