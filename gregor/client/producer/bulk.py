"""send_batch: the bulk path. Many records become a few large batches with no per-record
Python objects beyond the key/value list the caller already has; each batch is encoded once,
in one vectorised pass, by the caller's thread before it is queued."""
from __future__ import annotations

import threading
import time
from operator import itemgetter
from typing import NamedTuple

from ...protocol.errors import ErrorCode, error_for_code
from ...protocol.records.encoding import ArrowRows, is_arrow
from ..errors import KafkaTimeoutError
from .batch import BATCH_OVERHEAD, RECORD_OVERHEAD, ProducerBatch

# A bulk batch is capped below max.request.size (it must fit one request) and at 1 MiB, the
# broker's default message.max.bytes, so a default broker never refuses it as too large.
MAX_BULK_BATCH = 1024 * 1024
# Bulk batches are encoded by send_batch's caller (see _make); False leaves it to the sender.
ENCODE_IN_CALLER = True
# A compressed bulk batch is sized, as Kafka's producer sizes its batches, by what it is
# estimated to weigh on the wire: up to this many bytes of records before compression (8:1
# fills a 1 MiB batch; the encoder's reused scratch buffer holds this much). Per batch, the
# broker's and the consumers' costs are paid once for 8x the records: 1 MiB batches of
# lz4 records that compress ~10:1 cost the broker ~0.2 s more CPU per 5M records
# (benchmarks/bench_spark.py's per-process CPU).
MAX_BULK_UNCOMPRESSED = 8 << 20
# Sizing margin over the estimated ratio. A batch that still comes out larger than the cap
# is encoded again as two before it is queued, and the estimate moves up at once; it moves
# down at most by half per batch.
RATIO_MARGIN = 1.1


class BatchMetadata(NamedTuple):
    topic: str
    partition: int
    base_offset: int
    record_count: int


class _SameTimestamp:
    """timestamps[i] for a batch whose records share one timestamp."""

    __slots__ = ("ts",)

    def __init__(self, ts):
        self.ts = ts

    def __getitem__(self, i):
        return self.ts


class BulkSendResult:
    """What send_batch returns: result() waits for every batch and returns one BatchMetadata
    per batch written (records of a batch have offsets base_offset .. + record_count - 1)."""

    def __init__(self, batches):
        self._batches = batches
        self.record_count = sum(b.record_count for b in batches)

    def _results(self, timeout):
        deadline = None if timeout is None else time.monotonic() + timeout
        out = []
        for b in self._batches:
            r = b.result
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not r.done and not r.wait(left):
                raise KafkaTimeoutError(f"send_batch not acknowledged within {timeout} s")
            out.append((b, r))
        return out

    def result(self, timeout: float | None = None) -> list[BatchMetadata]:
        out = []
        for b, r in self._results(timeout):
            if r.split is not None:
                for _, child in r.split:
                    for_child = self._follow(child, timeout)
                    out.extend(for_child)
                continue
            if r.error is not None:
                raise r.error
            out.append(BatchMetadata(b.topic, b.partition, r.base_offset, b.record_count))
        return out

    def _follow(self, r, timeout):
        if not r.done and not r.wait(timeout):
            raise KafkaTimeoutError(f"send_batch not acknowledged within {timeout} s")
        if r.split is not None:
            return [m for _, c in r.split for m in self._follow(c, timeout)]
        if r.error is not None:
            raise r.error
        return [BatchMetadata(r.topic, r.partition, r.base_offset, -1)]

    def exception(self, timeout: float | None = None):
        try:
            self.result(timeout)
        except KafkaTimeoutError:
            raise
        except Exception as e:
            return e
        return None

    def done(self) -> bool:
        return all(b.result.done for b in self._batches)

    def add_done_callback(self, fn) -> None:
        """fn(self) once every batch is settled (from the sender thread, or at once)."""
        from .batch import _CALLBACK_LOCK
        left = [0]
        lock = threading.Lock()

        def one(_):
            with lock:
                left[0] -= 1
                last = left[0] == 0
            if last:
                fn(self)
        pending = []
        with _CALLBACK_LOCK:
            for b in self._batches:
                r = b.result
                if not r.done:
                    if r.done_callbacks is None:
                        r.done_callbacks = []
                    r.done_callbacks.append((0, one, None))
                    pending.append(r)
            left[0] = len(pending)
        if not pending:
            fn(self)


def _as_list(x, what):
    if x is None:
        return None
    if isinstance(x, list):
        return x
    mod = type(x).__module__
    if mod.startswith("pyarrow"):
        x = x.to_pylist()
    elif mod.startswith("numpy"):
        x = x.tolist()
    else:
        x = list(x)
    if x and not isinstance(x[0], (bytes, type(None))):
        x = [v.encode("utf-8") if isinstance(v, str) else
             (bytes(v) if v is not None else None) for v in x]
    return x


def _typed(ser, column, topic):
    """A typed Arrow column encoded by a serializer that takes whole columns (gregor.serde's
    Avro: encode_arrow); anything else as it is."""
    if ser is None or column is None or not is_arrow(column):
        return column
    encode = getattr(getattr(ser, "__self__", None), "encode_arrow", None)
    import pyarrow as pa
    t = getattr(column, "type", None)
    if encode is None or t is None or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return column
    return encode(column, topic)


def _from_table(table):
    names = table.column_names
    if "value" not in names:
        raise ValueError(f"send_batch needs a 'value' column; the table has {names}")
    values = table.column("value")
    keys = table.column("key") if "key" in names else None
    timestamps = None
    if "timestamp" in names:
        col = table.column("timestamp")
        import pyarrow as pa
        import pyarrow.compute as pc
        if pa.types.is_timestamp(col.type):
            col = pc.cast(col, pa.timestamp("ms")).cast(pa.int64())
        timestamps = col
    return values, keys, timestamps


# Below this many records the fixed cost of the conversion (a dozen numpy/Arrow calls) is
# not repaid.
LIST_TO_ARROW_MIN = 1000


def _list_to_arrow(items):
    """A list of bytes/None as a pyarrow binary array over one joined buffer (no per-item
    Arrow conversion), or None when the items are not all bytes/None (the list path then
    converts or refuses them)."""
    import numpy as np
    import pyarrow as pa
    from ...protocol.records.kernels import Column
    first = next((x for x in items if x is not None), None)
    if first is not None and type(first) is not bytes:
        return None
    try:
        col = Column.from_list(items)
    except TypeError:      # something other than bytes further on
        return None
    n = len(items)
    validity = None
    if not col.valid.all():
        validity = pa.py_buffer(np.packbits(col.valid, bitorder="little"))
    return pa.Array.from_buffers(pa.binary(), n, [validity, pa.py_buffer(col.offsets),
                                                  pa.py_buffer(col.data)])


def _arrow_binary(x):
    """x as one contiguous pyarrow binary array when it is a pyarrow binary/string array
    (chunked or not) that the compiled encoder can read; None when it is not."""
    if x is None or not is_arrow(x):
        return None
    import pyarrow as pa
    if isinstance(x, pa.ChunkedArray):
        x = x.combine_chunks() if x.num_chunks != 1 else x.chunk(0)
    t = x.type
    if pa.types.is_binary(t):
        return x
    if pa.types.is_string(t):
        return x.cast(pa.binary())
    if pa.types.is_large_binary(t) or pa.types.is_large_string(t):
        return x.cast(pa.large_binary()).cast(pa.binary())
    return None


def _arrow_timestamps(ts, now_ms):
    """int64 numpy timestamps from a pyarrow/numpy column (nulls: now)."""
    import numpy as np
    if is_arrow(ts):
        ts = ts.fill_null(now_ms) if ts.null_count else ts
        return np.asarray(ts.to_numpy(zero_copy_only=False), dtype=np.int64)
    return np.asarray(ts, dtype=np.int64)


def _columns(producer, values, keys, partition, headers):
    """(values, keys, arrow): Arrow binary arrays for the compiled path (arrow True), else
    lists. Arrow input stays Arrow, and lists of bytes become Arrow (one join each: measured
    ~20% less CPU per record than the list encoders, and the kernels run without the GIL),
    unless something needs Python values: headers, or keys that a custom partitioner (or
    the per-record partitioner, for null keys) must see one by one."""
    keyed_by_partitioner = keys is not None and partition is None
    if headers is None and type(values) is list and len(values) >= LIST_TO_ARROW_MIN and (
            keys is None or (type(keys) is list and producer._builtin and None not in keys)):
        arrow_values = _list_to_arrow(values)
        arrow_keys = None if keys is None else _list_to_arrow(keys)
        if arrow_values is not None and (keys is None or arrow_keys is not None):
            return arrow_values, arrow_keys, True
    arrow_values = _arrow_binary(values) if headers is None else None
    arrow_keys = _arrow_binary(keys)
    if arrow_values is not None and (keys is None or arrow_keys is not None) and not (
            keyed_by_partitioner and (arrow_keys.null_count or not producer._builtin)):
        return arrow_values, arrow_keys, True
    return _as_list(values, "values"), _as_list(keys, "keys"), False


def send_batch(producer, topic, values, keys=None, partition=None, timestamps=None,
               headers=None) -> BulkSendResult:
    if producer._closed:
        from ..errors import ProducerClosedError
        raise ProducerClosedError("send_batch() after close()")
    if hasattr(values, "column_names"):  # a pyarrow Table / RecordBatch
        values, tkeys, tts = _from_table(values)
        keys = tkeys if keys is None else keys
        timestamps = tts if timestamps is None else timestamps
    values = _typed(producer._value_ser, values, topic)
    keys = _typed(producer._key_ser, keys, topic)
    values, keys, arrow = _columns(producer, values, keys, partition, headers)
    n = len(values)
    if keys is not None and len(keys) != n:
        raise ValueError(f"send_batch: {len(keys)} keys for {n} values")
    if headers is not None and len(headers) != n:
        raise ValueError(f"send_batch: {len(headers)} header lists for {n} values")
    if n == 0:
        return BulkSendResult([])
    now_ms = int(time.time() * 1000)
    if timestamps is None:
        timestamps = now_ms
    elif arrow and not isinstance(timestamps, (int, list)):
        timestamps = _arrow_timestamps(timestamps, now_ms)
        if len(timestamps) != n:
            raise ValueError(f"send_batch: {len(timestamps)} timestamps for {n} values")
    elif not isinstance(timestamps, int):
        timestamps = _as_list(timestamps, "timestamps")
        timestamps = [now_ms if t is None else int(t) for t in timestamps]
        if len(timestamps) != n:
            raise ValueError(f"send_batch: {len(timestamps)} timestamps for {n} values")
    deadline = producer._clock() + producer._max_block
    nparts = producer._nparts.get(topic)
    if nparts is None or (partition is not None and partition >= nparts):
        nparts = producer._wait_on_metadata(topic, partition, deadline)
    if partition is not None and not 0 <= partition < nparts:
        raise error_for_code(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             f"partition {partition} of topic {topic!r} does not exist")
    wire_limit = min(producer._max_request_size - 512, MAX_BULK_BATCH, producer._total_memory)
    limit = wire_limit
    if producer._acc.compression and ENCODE_IN_CALLER:
        def limit():       # asked chunk by chunk: the estimate follows the batches encoded
            ratio = producer._bulk_ratios.get(topic, 1.0) * RATIO_MARGIN
            return max(wire_limit, min(int(wire_limit / ratio), MAX_BULK_UNCOMPRESSED,
                                       producer._total_memory))
    key_lengths = None
    # Records grouped per partition, in input order within a partition.
    if partition is not None or nparts == 1:
        groups = {partition or 0: None}
    elif keys is None or producer._ignore_keys or _all_null(keys, arrow):
        groups = None  # chunks go to partitions one after another (sticky per chunk)
    elif arrow:
        from .bulk_hash import murmur2_partitions_arrow
        groups = group_by_partition(murmur2_partitions_arrow(keys, nparts))
    elif producer._builtin and None not in keys:
        key_lengths = _lengths(keys)
        groups = _group_murmur2(keys, nparts, key_lengths)
    else:
        part = producer._partitioner
        avail = producer._avail.get(topic) or producer._metadata.available_partitions(topic)
        groups = {}
        for i, k in enumerate(keys):
            groups.setdefault(part(topic, k, values[i], nparts, avail), []).append(i)
    batches = []
    sizes = _record_sizes(values, keys, headers, key_lengths)
    max_records = producer._acc.max_records   # batch.num.messages
    rows = (values, keys, timestamps, headers, sizes)
    if groups is None:
        for lo, hi, size in _chunks(sizes, None, limit, max_records):
            p = producer._choose_partition(topic, None, None, nparts)
            st = producer._sticky_state.get(topic)
            if st is not None:
                st[1] += size
            batches += _make_fitting(producer, topic, p, rows, None, lo, hi, size, deadline,
                                     wire_limit)
            if producer._builtin:
                producer._sticky_boundary(topic, p, nparts)
    else:
        for p, idx in groups.items():
            for lo, hi, size in _chunks(sizes, idx, limit, max_records):
                batches += _make_fitting(producer, topic, p, rows, idx, lo, hi, size, deadline,
                                         wire_limit)
    _wake_sender(producer)
    return BulkSendResult(batches)


def _all_null(keys, arrow: bool) -> bool:
    """Every key null: partitioned like no keys at all (sticky per chunk), instead of asking
    the partitioner record by record for the same answer."""
    return keys.null_count == len(keys) if arrow else keys.count(None) == len(keys)


def group_by_partition(parts) -> dict:
    """{partition: int64 array of indices in input order} from each record's partition."""
    import numpy as np
    # A stable sort of 16-bit keys is a radix sort in numpy (~4x faster than on int64), and
    # bincount finds the groups without a second sort.
    small = parts.astype(np.uint16) if int(parts.max()) < 65536 else parts
    order = np.argsort(small, kind="stable")
    counts = np.bincount(parts)
    ends = np.cumsum(counts).tolist()
    out = {}
    start = 0
    for p, end in enumerate(ends):
        if end > start:
            out[p] = order[start:end]
        start = end
    return out


def _group_murmur2(keys, nparts, key_lengths=None) -> dict:
    """{partition: [indices in input order]} with Java's default partitioner, vectorised."""
    import numpy as np
    from .bulk_hash import murmur2_partitions
    parts = murmur2_partitions(keys, nparts, key_lengths)
    order = np.argsort(parts, kind="stable")
    ps, starts = np.unique(parts[order], return_index=True)
    bounds = starts.tolist() + [len(order)]
    return {int(p): order[bounds[j]:bounds[j + 1]].tolist() for j, p in enumerate(ps.tolist())}


def _pick(seq, sel):
    return list(itemgetter(*sel)(seq)) if len(sel) > 1 else [seq[sel[0]]]


def _lengths(seq):
    """len() of every item (None counts 0) as a numpy int64 array."""
    import numpy as np
    n = len(seq)
    if is_arrow(seq):
        from ...protocol.records.kernels import Column
        col = Column.from_arrow(seq)
        out = col.lengths()
        if seq.null_count:
            out[~col.valid] = 0
        return out
    try:
        return np.fromiter(map(len, seq), dtype=np.int64, count=n)
    except TypeError:  # None among them
        return np.fromiter((len(x) if x is not None else 0 for x in seq),
                           dtype=np.int64, count=n)


def _record_sizes(values, keys, headers, key_lengths=None):
    """Estimated wire size of every record (numpy int64), without a Python loop when
    there are no nulls or headers. `key_lengths` may be passed when already known."""
    import numpy as np
    n = len(values)
    sizes = _lengths(values)
    sizes += RECORD_OVERHEAD
    if keys is not None:
        sizes += _lengths(keys) if key_lengths is None else key_lengths
    if headers is not None:
        sizes += np.fromiter((sum(len(k) + (len(x) if x is not None else 0) + 6 for k, x in h)
                              if h else 0 for h in headers), dtype=np.int64, count=n)
    return sizes


def _chunks(sizes, indices, limit, max_records=None):
    """(lo, hi, estimated bytes) positions into `indices` (None: all records) so that each
    chunk's records plus a batch header fit `limit` (a record larger than that goes alone)
    and a chunk holds at most `max_records` records (None: no count limit). `limit` may be
    a function, asked again for each chunk."""
    import numpy as np
    sel = sizes if indices is None else sizes[np.asarray(indices, dtype=np.int64)]
    cum = np.cumsum(sel)
    total = len(sel)
    lo = 0
    base = 0
    while lo < total:
        room = (limit() if callable(limit) else limit) - BATCH_OVERHEAD
        hi = int(np.searchsorted(cum, base + room, side="right"))
        hi = max(hi, lo + 1)
        if max_records is not None:
            hi = min(hi, lo + max_records)
        size = int(cum[hi - 1]) - base + BATCH_OVERHEAD
        yield lo, hi, size
        base = int(cum[hi - 1])
        lo = hi


def _make_fitting(producer, topic, p, rows, idx, lo, hi, size, deadline, wire_limit) -> list:
    """The batch of records lo..hi (of idx, or of all records when idx is None), queued; or,
    when it was encoded larger than wire_limit (it compressed worse than estimated), the
    same records as two batches, each checked the same way."""
    values, keys, timestamps, headers, sizes = rows
    sel = None if idx is None else idx[lo:hi]
    b = _make(producer, topic, p, values, keys, timestamps, headers, lo, hi, sel, size,
              deadline, queue=False)
    if b.data is not None and b.compression:
        _note_ratio(producer, topic, len(b.data), size)
        if len(b.data) > wire_limit and hi - lo > 1:
            import numpy as np
            producer._pool.deallocate(b.reserved)      # never queued: its memory goes back
            b.reserved = 0
            mid = (lo + hi) // 2
            out = []
            for a, z in ((lo, mid), (mid, hi)):
                part = sizes[a:z] if idx is None else sizes[np.asarray(idx[a:z], np.int64)]
                out += _make_fitting(producer, topic, p, rows, idx, a, z,
                                     int(part.sum()) + BATCH_OVERHEAD, deadline, wire_limit)
            return out
    producer._acc.add_batch(b)
    _wake_sender(producer)
    return [b]


def _note_ratio(producer, topic: str, wire: int, records: int) -> None:
    """Move the topic's estimated compression ratio towards what a batch came out at: up at
    once, down by at most half (one well-compressing batch is not a trend)."""
    seen = wire / max(records, 1)
    est = producer._bulk_ratios.get(topic, 1.0)
    producer._bulk_ratios[topic] = max(seen, est + 0.05) if seen > est else max(seen, est / 2)


def _make(producer, topic, p, values, keys, timestamps, headers, lo, hi, sel, size, deadline,
          queue: bool = True):
    producer._pool.allocate(size, max(0.0, deadline - producer._clock()))
    acc = producer._acc
    b = ProducerBatch(topic, p, producer._clock(), size, size, acc.compression)
    b.bulk = True
    if is_arrow(values):
        import pyarrow as pa
        if sel is None:
            b.values = values.slice(lo, hi - lo)
            b.keys = keys.slice(lo, hi - lo) if keys is not None else \
                pa.nulls(hi - lo, pa.binary())
            ts = timestamps if isinstance(timestamps, int) else timestamps[lo:hi]
        else:   # the encoder reads the selected rows in place (no take() copy)
            b.values = ArrowRows(values, sel)
            b.keys = ArrowRows(keys, sel)
            ts = timestamps if isinstance(timestamps, int) else timestamps[sel]
    elif sel is None:
        b.values = values[lo:hi]
        b.keys = keys[lo:hi] if keys is not None else [None] * (hi - lo)
        if headers is not None:
            b.headers = headers[lo:hi]
        ts = timestamps if isinstance(timestamps, int) else timestamps[lo:hi]
    else:
        b.values = _pick(values, sel)
        b.keys = _pick(keys, sel)
        if headers is not None:
            b.headers = _pick(headers, sel)
        ts = timestamps if isinstance(timestamps, int) else _pick(timestamps, sel)
    b.timestamps = ts
    b.result.timestamps = _SameTimestamp(ts) if isinstance(ts, int) else ts
    b.size = size
    if ENCODE_IN_CALLER:
        # Encode here, in the caller's thread, not in the sender: the sender then only moves
        # bytes, so when an answer frees an in-flight slot the next request leaves at once
        # instead of after a multi-millisecond encode, and the broker is not left idle. The
        # producer id / sequence fields are filled in at drain (a header rewrite) when
        # idempotence is on.
        b.close()
        acc.account_encoded(b)
    if queue:
        acc.add_batch(b)
        _wake_sender(producer)
    return b


def _wake_sender(producer) -> None:
    """Wake the sender thread if it may be asleep past now (a full batch is ready at once).
    While requests are in flight it looks at the queues every linger.ms anyway (see
    Sender.run_once), and a wakeup is a syscall plus a GIL hand-off per batch."""
    if producer._sender.idle_until > producer._clock():
        producer._network.wakeup()
