"""The compiled records encoder (records/kernels.py) writes exactly the bytes of the
plain-Python encoder, for Arrow columns and lists, nulls, slices and any lengths."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings, strategies as st

from gregor.protocol.records.batch import decode_batches, validate_batch
from gregor.protocol.records.builder import build_batch_bulk
from gregor.protocol.records.encoding import encode_records_loop
from gregor.protocol.records.kernels import Column, encode_records_columns

# Lengths around 8192 make the length varints 2 and 3 bytes long (zig-zag doubles them).
maybe_bytes = st.one_of(st.none(), st.binary(max_size=40),
                        st.integers(8180, 8200).map(lambda n: b"\x07" * n))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(maybe_bytes, maybe_bytes,
                          st.integers(-2**40, 2**40)), min_size=1, max_size=40),
       st.integers(0, 3))
def test_kernel_matches_the_python_encoder(rows, cut):
    keys = [k for k, _, _ in rows]
    values = [v for _, v, _ in rows]
    ts = [t for _, _, t in rows]
    base = ts[0]
    expected = encode_records_loop(ts, keys, values, None, base)
    tdelta = np.array(ts, dtype=np.int64) - base
    from_lists = encode_records_columns(Column.from_list(keys), Column.from_list(values),
                                        tdelta)
    assert from_lists.tobytes() == expected
    # Arrow arrays, sliced so that offsets do not start at 0 and the buffers hold more.
    pad = [b"pad"] * cut
    ka = pa.array(pad + keys + pad, pa.binary()).slice(cut, len(keys))
    va = pa.array(pad + values + pad, pa.binary()).slice(cut, len(values))
    from_arrow = encode_records_columns(Column.from_arrow(ka), Column.from_arrow(va), tdelta)
    assert from_arrow.tobytes() == expected


def test_all_null_keys_column():
    values = [b"a", None, b"ccc"]
    tdelta = np.zeros(3, dtype=np.int64)
    got = encode_records_columns(Column.nulls(3), Column.from_list(values), tdelta)
    assert got.tobytes() == encode_records_loop([0] * 3, [None] * 3, values, None, 0)


def test_arrow_batch_decodes_and_validates():
    n = 3000
    keys = pa.array([b"key-%d" % (i % 97) if i % 5 else None for i in range(n)], pa.binary())
    values = pa.array(["value %d" % i for i in range(n)], pa.string()).cast(pa.binary())
    ts = np.arange(n, dtype=np.int64) * 7 + 1_700_000_000_000
    data = build_batch_bulk(keys, values, ts, "zstd", producer_id=3, producer_epoch=0,
                            base_sequence=10)
    validate_batch(data, from_client=True)
    (batch,) = decode_batches(data)
    assert [r.key for r in batch] == keys.to_pylist()
    assert [r.value for r in batch] == values.to_pylist()
    assert [r.timestamp for r in batch] == ts.tolist()
    assert batch.base_sequence == 10 and batch.compression == 4


def test_arrow_and_list_inputs_build_the_same_batch():
    keys = [b"k", None, b"", b"kk" * 100]
    values = [None, b"v", b"w" * 20000, b""]
    ts = [5, 3, 9_000_000_000, 5]
    expected = build_batch_bulk(keys, values, ts)
    assert build_batch_bulk(pa.array(keys, pa.binary()), pa.array(values, pa.binary()),
                            np.array(ts)) == expected
    # headers force the Python path; Arrow input is still accepted
    hdrs = [[("h", b"1")], None, None, None]
    assert build_batch_bulk(pa.array(keys, pa.binary()), pa.array(values, pa.binary()), ts,
                            headers=hdrs) == build_batch_bulk(keys, values, ts, headers=hdrs)


def test_selected_rows_encode_like_the_taken_arrays():
    from gregor.protocol.records.encoding import ArrowRows
    keys = pa.array([b"k%d" % i if i % 4 else None for i in range(50)], pa.binary())
    values = pa.array([b"v" * i if i % 9 else None for i in range(50)], pa.binary())
    rows = np.array([3, 4, 9, 10, 27, 49], dtype=np.int64)
    ts = np.arange(50, dtype=np.int64)[rows] * 1000
    expected = build_batch_bulk(keys.take(rows), values.take(rows), ts)
    assert build_batch_bulk(ArrowRows(keys, rows), ArrowRows(values, rows), ts) == expected
    hdrs = [[("h", b"%d" % i)] for i in range(len(rows))]
    assert build_batch_bulk(ArrowRows(keys, rows), ArrowRows(values, rows), ts, headers=hdrs) \
        == build_batch_bulk(keys.take(rows).to_pylist(), values.take(rows).to_pylist(), ts,
                            headers=hdrs)


def test_in_place_arrow_batch_equals_the_assembled_one():
    # Uncompressed Arrow batches are written straight into their buffer (no records copy):
    # every header field must come out as assemble_batch writes it.
    keys = [b"k%d" % i for i in range(300)]
    values = [b"v" * (i % 50) if i % 7 else None for i in range(300)]
    ts = [1_000 + 3 * i for i in range(300)]
    kw = dict(producer_id=42, producer_epoch=3, base_sequence=99, transactional=True,
              base_offset=7, partition_leader_epoch=5)
    expected = build_batch_bulk(keys, values, ts, **kw)
    got = build_batch_bulk(pa.array(keys, pa.binary()), pa.array(values, pa.binary()),
                           np.array(ts), mutable=True, **kw)
    assert type(got) is bytearray and got == expected
    assert type(build_batch_bulk(pa.array(keys, pa.binary()), pa.array(values, pa.binary()),
                                 np.array(ts), **kw)) is bytes
    validate_batch(bytes(got), from_client=False)


def test_extreme_timestamp_deltas_match_the_python_encoder():
    # |delta| >= 2**62: the zig-zagged delta needs all 64 bits (10-byte varint)
    ts = [0, 2**62, -2**62, 2**63 - 1, -2**63 + 1, 5]
    keys = [b"k"] * len(ts)
    values = [b"v", None, b"", b"x" * 300, b"y", b"z"]
    got = encode_records_columns(Column.from_list(keys), Column.from_list(values),
                                 np.array(ts, dtype=np.int64))
    assert got.tobytes() == encode_records_loop(ts, keys, values, None, 0)

