"""Sink rows sorted into their Kafka partitions as they arrive (the sink's keyed fast path).

Spark hands a sink task ~10,000 rows per Arrow batch; the sink gathers 32 MiB of them before
sending, so that each partition gets a full compressed bulk batch. Gathering them as they
were (concatenated) and picking each partition's rows out of the whole at send time cost
~50 ns a record for the concatenation and ~45 for the encoder's scattered reads (the whole
gathered data is read once per partition, long after it left the cache), per record of 110
B on these machines. Here each batch is hashed and its rows copied into per-partition
columns at once, while the batch is fresh in cache (~30 ns a record with the hash); at send
time each partition's rows are contiguous and the encoder reads them front to back (~13 ns).
The buffers are kept per thread and reused from task to task: fresh multi-megabyte
allocations cost a page fault per 4 KiB touched on these machines (benchmarks/
bench_sink_gather.py measures both ways).

Only rows the producer would spread with its default partitioner by key go this way: every
key present (murmur2 of the key, as Java's producer and send_batch compute it), no
partition column, no headers, no null value, one topic. Anything else takes the general
path in client.py, which groups the rows at send time.
"""
from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa

from ..client.producer.bulk import group_by_partition
from ..client.producer.bulk_hash import murmur2_partitions_arrow
from ..protocol.records.kernels import Column, append_rows, kernel_args

# Buffers larger than this are dropped after use instead of kept for the next task.
KEEP_BYTES = 96 << 20


class _Column:
    """One growable binary column without nulls: int32 offsets and a uint8 data buffer."""

    __slots__ = ("offsets", "data")

    def __init__(self):
        self.offsets = np.zeros(1 << 10, dtype=np.int32)
        self.data = np.empty(1 << 16, dtype=np.uint8)

    def reserve(self, count: int, items: int, nbytes: int) -> None:
        """Room for `items` more items of `nbytes` after the first `count`."""
        if count + items + 1 > len(self.offsets):
            grown = np.zeros(max(count + items + 1, 2 * len(self.offsets)), dtype=np.int32)
            grown[:count + 1] = self.offsets[:count + 1]
            self.offsets = grown
        used = int(self.offsets[count])
        if used + nbytes > len(self.data):
            grown = np.empty(max(used + nbytes, 2 * len(self.data)), dtype=np.uint8)
            grown[:used] = self.data[:used]
            self.data = grown

    def array(self, count: int, type_) -> pa.Array:
        """The first `count` items as an Arrow array over these buffers (no copy): valid until
        the next reset."""
        end = int(self.offsets[count])
        return pa.Array.from_buffers(type_, count, [
            None, pa.py_buffer(self.offsets[:count + 1]), pa.py_buffer(self.data[:end])])

    def capacity(self) -> int:
        return self.offsets.nbytes + self.data.nbytes


class _Partition:
    __slots__ = ("keys", "values", "count")

    def __init__(self):
        self.keys = _Column()
        self.values = _Column()
        self.count = 0


class PartitionedRows:
    """Keys and values of one topic's sink rows, per partition, in arrival order."""

    def __init__(self):
        self._parts: dict[int, _Partition] = {}
        self.rows = 0
        self.nbytes = 0
        self.key_type = self.value_type = None

    def takes(self, keys, values) -> bool:
        """Whether add() takes these columns: 32-bit offsets (binary or string), no null, and
        the same types as the rows already held."""
        return (_plain(keys) and _plain(values) and keys.null_count == 0
                and values.null_count == 0
                and (self.rows == 0 or (keys.type == self.key_type
                                        and values.type == self.value_type)))

    def add(self, keys, values, num_partitions: int) -> None:
        """Append the rows (pyarrow arrays that takes() accepted) to their partitions:
        murmur2 of the key modulo num_partitions."""
        n = len(values)
        if n == 0:
            return
        kcol, vcol = Column.from_arrow(keys), Column.from_arrow(values)
        parts = murmur2_partitions_arrow(keys, num_partitions)
        ko, kd = kernel_args(kcol.offsets, kcol.data)
        vo, vd = kernel_args(vcol.offsets, vcol.data)
        for p, rows in group_by_partition(parts).items():
            part = self._parts.get(p)
            if part is None:
                part = self._parts[p] = _Partition()
            # Room for the whole batch's bytes in each partition it reaches: an upper bound
            # that needs no per-partition count (buffers grow by doubling, so the slack is
            # at most one batch per partition).
            part.keys.reserve(part.count, len(rows), kcol.nbytes)
            part.values.reserve(part.count, len(rows), vcol.nbytes)
            append_rows(ko, kd, rows, part.keys.offsets, part.keys.data, part.count)
            append_rows(vo, vd, rows, part.values.offsets, part.values.data, part.count)
            part.count += len(rows)
        self.key_type, self.value_type = keys.type, values.type
        self.rows += n
        self.nbytes += kcol.nbytes + vcol.nbytes

    def partitions(self):
        """(partition, keys, values) for each partition holding rows, in partition order; the
        arrays are views of the buffers, valid until reset()."""
        for p in sorted(self._parts):
            part = self._parts[p]
            if part.count:
                yield (p, part.keys.array(part.count, self.key_type),
                       part.values.array(part.count, self.value_type))

    def reset(self) -> None:
        """Forget the rows; keep the buffers for the next ones unless they grew past
        KEEP_BYTES."""
        held = sum(p.keys.capacity() + p.values.capacity() for p in self._parts.values())
        if held > KEEP_BYTES:
            self._parts = {}
        for part in self._parts.values():
            part.count = 0
        self.rows = 0
        self.nbytes = 0
        self.key_type = self.value_type = None


def _plain(arr) -> bool:
    return pa.types.is_binary(arr.type) or pa.types.is_string(arr.type)


_local = threading.local()


def borrow() -> PartitionedRows:
    """This thread's kept buffers (a Python worker runs one Spark task at a time), or new
    ones when they are in use; give them back with give_back()."""
    mine = getattr(_local, "idle", None)
    _local.idle = None
    return mine if mine is not None else PartitionedRows()


def give_back(rows: PartitionedRows) -> None:
    """Keep the buffers for this thread's next task (emptied; see KEEP_BYTES)."""
    rows.reset()
    _local.idle = rows
