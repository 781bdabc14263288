"""Confluent-framed Avro values <-> typed Arrow columns, for the bulk paths (poll_batches
(arrow=True), send_batch of a typed table, the Spark formats).

Decoding reads the 5-byte headers of all values at once (numpy), groups the records by
writer schema id, decodes each group in one compiled pass (_avro_columns.pyx, driven by a
program made once per writer schema) and resolves the writer's columns into the reader's type
(Avro's rules: fields matched by name or alias, missing ones filled with their default,
int -> long -> float -> double and string <-> bytes promoted). Schemas the program does not
cover (arrays, maps, decimals) and machines without the compiled module take fastavro, one
record at a time, with the same results."""
from __future__ import annotations

import io

import fastavro
import numpy as np
import pyarrow as pa

from ..compiled import load
from . import avro_encode
from .avro_schema import parse_avro, resolve_references
from .avro_program import Program, Unsupported
from .avro_types import arrow_type, avro_schema, named_types, nullable_branch
from .base import make_schema
from .errors import NotFramedError, SerializationError, UnknownSchemaError
from .framing import header

_compiled = load("gregor.serde._avro_columns")


class RecordDecodeError(SerializationError):
    """Record `row` of the array did not decode; `reason` says why."""

    def __init__(self, row: int, reason: str, cause: type = SerializationError):
        super().__init__(reason)
        self.row = row
        self.reason = reason
        self.kind = cause


class _Writer:
    __slots__ = ("parsed", "program", "same_as_reader")

    def __init__(self, parsed, program, same):
        self.parsed, self.program, self.same_as_reader = parsed, program, same


def _binary_parts(values: pa.Array):
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if pa.types.is_large_binary(values.type) or pa.types.is_string(values.type):
        values = values.cast(pa.binary())
    if not pa.types.is_binary(values.type):
        raise TypeError(f"Avro values must be a binary column, not {values.type}")
    n = len(values)
    bufs = values.buffers()
    offsets = np.frombuffer(bufs[1], np.int32, n + 1, values.offset * 4) if n else \
        np.zeros(1, np.int32)
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    nulls = values.is_null().to_numpy(zero_copy_only=False) if values.null_count else None
    return n, offsets.astype(np.int64), data, nulls


class AvroArrowDecoder:
    """AvroArrowDecoder(registry, subject=... | schema_str=...): decode(values) turns a binary
    array of Confluent-framed Avro into an array of the reader schema's Arrow type: the
    subject's latest schema (read when the decoder is made; refresh() reads it again) or
    schema_str. Null values stay null (tombstones). A record without the magic byte, with an
    id the registry does not know, or whose bytes do not decode raises RecordDecodeError
    naming its row, or, with permissive=True, becomes null (its row is in decode's second
    result)."""

    def __init__(self, registry, *, subject: str | None = None, schema_str: str | None = None,
                 permissive: bool = False):
        if (subject is None) == (schema_str is None):
            raise ValueError("give the reader schema as subject= or schema_str=")
        self._registry = registry
        self._subject = subject
        self.permissive = permissive
        self._schema_str = schema_str
        self.refresh()

    def refresh(self) -> None:
        named: dict = {}
        if self._subject is not None:
            latest = self._registry.get_latest_version(self._subject)
            resolve_references(self._registry, latest.schema.references, named)
            text = latest.schema.schema_str
            self.reader_id = latest.schema_id
        else:
            text, self.reader_id = self._schema_str, None
        self.reader_text = text
        self.reader = parse_avro(text, named)
        self.arrow_type = arrow_type(self.reader)
        self._writers: dict[int, _Writer] = {}

    def _writer(self, sid: int) -> _Writer:
        w = self._writers.get(sid)
        if w is None:
            try:
                schema = self._registry.get_schema(sid)
            except Exception as e:
                if getattr(e, "error_code", None) in (40403, 40400) or \
                        getattr(e, "http_status_code", getattr(e, "http_status", 0)) == 404:
                    raise UnknownSchemaError(f"schema id {sid} is not in the registry") from e
                raise
            named: dict = {}
            resolve_references(self._registry, schema.references, named)
            parsed = parse_avro(schema.schema_str, named)
            program = None
            if _compiled is not None:
                try:
                    program = Program(parsed)
                except Unsupported:
                    program = None
            same = sid == self.reader_id or schema.schema_str == self.reader_text
            w = self._writers[sid] = _Writer(parsed, program, same)
        return w

    def decode(self, values: pa.Array):
        """(array of the reader type, numpy rows that became null because they did not
        decode (permissive only; empty otherwise))."""
        n, offsets, data, nulls = _binary_parts(values)
        starts, ends = offsets[:-1], offsets[1:]
        bad_rows: list[int] = []
        present = np.ones(n, bool) if nulls is None else ~nulls
        framed = present & (ends - starts >= 5)
        if data.size:
            first = np.where(framed, starts, 0)
            framed &= data[first] == 0
        else:
            framed[:] = False
        unframed = np.flatnonzero(present & ~framed)
        if unframed.size:
            if not self.permissive:
                r = int(unframed[0])
                raise RecordDecodeError(r, "no magic byte: the value is not Confluent-framed "
                                           "(expected byte 0 then a 4-byte schema id)",
                                        NotFramedError)
            bad_rows.extend(unframed.tolist())
        rows = np.flatnonzero(framed)
        if rows.size == 0:
            return pa.nulls(n, self.arrow_type), np.array(sorted(bad_rows), np.int64)
        # The 4 id bytes of every framed record side by side, read as big-endian uint32.
        s = starts[rows] if rows.size != n else starts
        raw = np.empty((len(s), 4), np.uint8)
        for k in range(4):
            raw[:, k] = data[s + (k + 1)]
        ids = raw.view(">u4").ravel().astype(np.int64)
        pieces, order = [], []
        # One writer is the common case: a comparison pass instead of a sort or a hash.
        uniq = ids[:1] if (ids == ids[0]).all() else np.unique(ids)
        for sid in uniq.tolist():
            group = rows if len(uniq) == 1 else rows[ids == sid]
            try:
                w = self._writer(sid)
            except UnknownSchemaError as e:
                if not self.permissive:
                    raise RecordDecodeError(int(group[0]), str(e), UnknownSchemaError) from e
                bad_rows.extend(group.tolist())
                continue
            arr, group, bad = self._decode_group(w, data, starts[group] + 5, ends[group], group)
            bad_rows.extend(bad)
            pieces.append(arr)
            order.append(group)
        return self._assemble(n, pieces, order), np.array(sorted(bad_rows), np.int64)

    def _assemble(self, n, pieces, order):
        got = sum(len(p) for p in pieces)
        if len(pieces) == 1 and got == n:
            return pieces[0]
        if got < n:
            placed = np.concatenate(order) if order else np.zeros(0, np.int64)
            missing = np.setdiff1d(np.arange(n), placed)
            pieces = pieces + [pa.nulls(len(missing), self.arrow_type)]
            order = order + [missing]
        combined = pa.concat_arrays(pieces)
        inverse = np.empty(n, np.int64)
        inverse[np.concatenate(order)] = np.arange(n)
        return combined.take(pa.array(inverse))

    def _decode_group(self, w: _Writer, data, s, e, rows):
        """(array, rows it covers, rows dropped as bad) for one writer schema."""
        bad: list[int] = []
        while True:
            try:
                if w.program is not None:
                    arr = self._compiled(w, data, s, e)
                else:
                    arr = self._fastavro(w, data, s, e)
                return arr, rows, bad
            except RecordDecodeError as err:
                if not self.permissive:
                    raise RecordDecodeError(int(rows[err.row]), err.reason) from None
                bad.append(int(rows[err.row]))
                keep = np.arange(len(rows)) != err.row
                s, e, rows = s[keep], e[keep], rows[keep]
                if not len(rows):
                    return pa.nulls(0, self.arrow_type), rows, bad

    def _compiled(self, w, data, s, e):
        prog = w.program
        n = len(s)
        fixed, valid, offsets = prog.buffers(n)
        out, bad, err = _compiled.decode(data if data.size else np.zeros(1, np.uint8),
                                         np.ascontiguousarray(s), np.ascontiguousarray(e),
                                         prog.op_array, fixed, valid, offsets, prog.col_kinds)
        if bad >= 0:
            raise RecordDecodeError(bad, f"Avro payload does not decode: "
                                         f"{_compiled.ERRORS.get(err, err)}")
        arr = prog.build(n, fixed, valid, offsets, out)
        if w.same_as_reader:
            return arr
        return resolve(arr, w.parsed, self.reader, named_types(w.parsed),
                       named_types(self.reader))

    def _fastavro(self, w, data, s, e):
        buf = data.tobytes() if data.size else b""
        rows = []
        reader = None if w.same_as_reader else self.reader
        for i in range(len(s)):
            try:
                rows.append(fastavro.schemaless_reader(io.BytesIO(buf[s[i]:e[i]]), w.parsed,
                                                       reader))
            except Exception as ex:
                raise RecordDecodeError(i, f"Avro payload does not decode: {ex}") from None
        return pa.array(rows, self.arrow_type)


def _deref(s, named):
    while isinstance(s, str) and s in named:
        s = named[s]
    if isinstance(s, list):
        nb = nullable_branch(s)
        if nb is not None:
            return _deref(nb[1], named)
        if len(s) == 1:
            return _deref(s[0], named)
    if isinstance(s, dict) and isinstance(s.get("type"), (dict, list)):
        return _deref(s["type"], named)
    return s


def _record(s):
    return isinstance(s, dict) and s.get("type") in ("record", "error")


def resolve(arr: pa.Array, writer, reader, wnamed: dict, rnamed: dict) -> pa.Array:
    """arr (decoded with the writer schema) as the reader schema's Arrow type."""
    w, r = _deref(writer, wnamed), _deref(reader, rnamed)
    if _record(r):
        if not _record(w):
            raise SerializationError(f"writer type {w} cannot be read as record {r['name']}")
        wfields = {f["name"]: f for f in w["fields"]}
        children = []
        n = len(arr)
        for f in r["fields"]:
            src = next((nm for nm in [f["name"], *f.get("aliases", ())] if nm in wfields), None)
            if src is not None:
                child = resolve(arr.field(src), wfields[src]["type"], f["type"], wnamed, rnamed)
            elif "default" in f:
                t = arrow_type(f["type"], rnamed)
                default = f["default"]
                child = (pa.nulls(n, t) if default is None else
                         pa.array([default], t).take(pa.array(np.zeros(n, np.int64))))
            else:
                raise SerializationError(f"reader field {f['name']!r} has no default and the "
                                         f"writer's record {w.get('name')} lacks it")
            children.append(child)
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(arrow_type(r, rnamed)),
                                          mask=mask)
    target = arrow_type(r, rnamed)
    if arr.type == target:
        return arr
    try:
        return arr.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise SerializationError(f"writer values of type {arr.type} cannot be read as "
                                 f"{target}: {e}") from None


class AvroArrowEncoder:
    """AvroArrowEncoder(registry, subject, schema_str=None): encode(struct array or table)
    -> binary array of Confluent-framed Avro. Without schema_str the schema is derived from
    the Arrow type (avro_types.avro_schema) and registered under the subject (or found, with
    auto_register=False)."""

    def __init__(self, registry, subject: str, schema_str: str | None = None, *,
                 arrow_type_: pa.DataType | None = None, auto_register: bool = True,
                 record_name: str = "record", namespace: str | None = None):
        import json
        self._registry = registry
        self._subject = subject
        self._auto = auto_register
        self._record_name, self._namespace = record_name, namespace
        self.schema_str = schema_str
        self.schema_id = None
        if schema_str is None and arrow_type_ is not None:
            self.schema_str = json.dumps(avro_schema(arrow_type_, record_name, namespace))
        if self.schema_str is not None:
            self._ready()

    def _ready(self):
        schema = make_schema(self._registry, self.schema_str, "AVRO")
        if self._auto:
            self.schema_id = self._registry.register_schema(self._subject, schema)
        else:
            self.schema_id = self._registry.lookup_schema(self._subject, schema).schema_id
        self.parsed = parse_avro(self.schema_str)

    def encode(self, values) -> pa.BinaryArray:
        import json
        if self.schema_str is None:
            t = _struct_of(values).type
            self.schema_str = json.dumps(avro_schema(t, self._record_name, self._namespace))
            self._ready()
        return encode_rows(values, self.schema_id, self.parsed)


def _struct_of(values):
    if isinstance(values, (pa.Table, pa.RecordBatch)):
        cols = [values.column(i) for i in range(values.num_columns)]
        cols = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in cols]
        return pa.StructArray.from_arrays(cols, values.column_names)
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks()
    return values


def encode_rows(values, schema_id: int, parsed) -> pa.BinaryArray:
    """Rows of a typed Arrow array (or table) as framed Avro (null rows stay null): column by
    column through the compiled encoder (avro_encode.py) when it covers the schema and the
    array's type, else through fastavro one row at a time (the same bytes)."""
    values = _struct_of(values)
    head = header(schema_id)
    try:
        return avro_encode.encode(values, head, parsed)
    except avro_encode.Unsupported:
        return encode_rows_fastavro(values, head, parsed)


def encode_rows_fastavro(values: pa.Array, head: bytes, parsed) -> pa.BinaryArray:
    """The reference path: each row as a Python object through fastavro."""
    out = []
    buf = io.BytesIO()
    write = fastavro.schemaless_writer
    for row in values.to_pylist(maps_as_pydicts="lossy"):   # a repeated key: the last
        if row is None:
            out.append(None)
            continue
        buf.seek(0)
        buf.truncate()
        buf.write(head)
        try:
            write(buf, parsed, row)
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            raise SerializationError(f"row does not match the Avro schema: {e}") from e
        out.append(buf.getvalue())
    return pa.array(out, pa.binary())
