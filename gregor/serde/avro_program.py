"""The compiled Avro column decoder's program for one writer schema, and the Arrow arrays
built from the buffers it fills (see _avro_columns.pyx). Schemas with arrays, maps, decimals
or unions other than T-or-null have no program (Unsupported): avro_arrow.py decodes those with
fastavro instead."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from .avro_types import _LOGICAL, arrow_type, named_types, nullable_branch

K_NULL, K_BOOL, K_INT, K_LONG, K_FLOAT, K_DOUBLE, K_BYTES, K_FIXED, K_ENUM, K_RECORD, \
    K_UNION = range(11)
_KINDS = {"null": K_NULL, "boolean": K_BOOL, "int": K_INT, "long": K_LONG, "float": K_FLOAT,
          "double": K_DOUBLE, "string": K_BYTES, "bytes": K_BYTES}
_WIDTH = {K_BOOL: 1, K_INT: 4, K_LONG: 8, K_FLOAT: 4, K_DOUBLE: 8, K_ENUM: 4}
_PLAIN = {"boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
          "double": pa.float64(), "string": pa.string(), "bytes": pa.binary(),
          "null": pa.null()}


class Unsupported(Exception):
    """The schema needs the fastavro path."""


class Column:
    __slots__ = ("kind", "type", "width", "children", "symbols", "maybe_null")

    def __init__(self, kind, type_, width=0):
        self.kind, self.type, self.width = kind, type_, width
        self.children: list = []
        self.symbols = None
        self.maybe_null = False


class Program:
    """ops (n x 5 int64) and the columns they fill, in depth-first order."""

    def __init__(self, schema):
        self.named = named_types(schema)
        self.ops: list = []
        self.columns: list[Column] = []
        self.root = self._emit(schema, False)
        self.op_array = np.array(self.ops, dtype=np.int64).reshape(-1, 5)
        self.col_kinds = np.array([c.kind for c in self.columns], dtype=np.int64)

    def _new(self, kind, type_, width, under_null):
        col = Column(kind, type_, width)
        col.maybe_null = under_null
        self.columns.append(col)
        return len(self.columns) - 1, col

    def _emit(self, s, under_null):
        if isinstance(s, str) and s in self.named:
            s = self.named[s]
        if isinstance(s, list):
            nb = nullable_branch(s)
            if nb is None:
                if len(s) == 1:
                    return self._emit(s[0], under_null)
                raise Unsupported(f"union {s}")
            row = len(self.ops)
            self.ops.append([K_UNION, len(self.columns), nb[0], 0, 0])
            idx = self._emit(nb[1], True)
            self.ops[row][3] = len(self.ops)
            self.ops[row][4] = len(self.columns)
            return idx
        if isinstance(s, str):
            if s not in _KINDS:
                raise Unsupported(s)
            kind = _KINDS[s]
            i, _ = self._new(kind, _PLAIN[s], _WIDTH.get(kind, 0), under_null)
            self.ops.append([kind, i, 0, 0, 0])
            return i
        t = s["type"]
        logical = s.get("logicalType")
        if t in ("record", "error"):
            i, col = self._new(K_RECORD, None, 0, under_null)
            self.ops.append([K_RECORD, i, 0, 0, 0])
            for f in s["fields"]:
                col.children.append((f["name"], self._emit(f["type"], under_null)))
            col.type = arrow_type(s, self.named)
            return i
        if t == "enum":
            i, col = self._new(K_ENUM, pa.string(), 4, under_null)
            col.symbols = list(s["symbols"])
            self.ops.append([K_ENUM, i, len(col.symbols), 0, 0])
            return i
        if logical == "decimal":
            raise Unsupported("decimal")
        if t == "fixed":
            size = int(s["size"])
            i, _ = self._new(K_FIXED, pa.binary(size), size, under_null)
            self.ops.append([K_FIXED, i, size, 0, 0])
            return i
        if isinstance(t, str) and (t, logical) in _LOGICAL:
            i = self._emit(t, under_null)
            self.columns[i].type = _LOGICAL[(t, logical)]
            return i
        return self._emit(t, under_null)   # a primitive, or an unknown logical type: its base

    def buffers(self, n: int):
        """Fresh (fixed, valid, offsets) lists for n rows."""
        fixed, valid, offsets = [], [], []
        for c in self.columns:
            if c.kind in _WIDTH or c.kind == K_FIXED:
                fixed.append(np.zeros(n * c.width, np.uint8))
            else:
                fixed.append(None)
            valid.append(np.ones(n, np.uint8) if c.maybe_null else None)
            offsets.append(np.empty(n + 1, np.int32) if c.kind == K_BYTES else None)
        return fixed, valid, offsets

    def build(self, n, fixed, valid, offsets, data) -> pa.Array:
        return self._array(self.root, n, fixed, valid, offsets, data)

    def _array(self, i, n, fixed, valid, offsets, data):
        c = self.columns[i]
        bitmap, nulls = None, 0
        if valid[i] is not None:
            nulls = n - int(np.count_nonzero(valid[i]))
            if nulls:
                bitmap = pa.py_buffer(np.packbits(valid[i], bitorder="little"))
        if c.kind == K_RECORD:
            children = [self._array(j, n, fixed, valid, offsets, data) for _, j in c.children]
            mask = pa.array(valid[i] == 0) if nulls else None
            return pa.StructArray.from_arrays(children, fields=list(c.type), mask=mask)
        if c.kind == K_NULL:
            return pa.nulls(n)
        if c.kind == K_BYTES:
            return pa.Array.from_buffers(c.type, n, [bitmap, pa.py_buffer(offsets[i]),
                                                     pa.py_buffer(data[i])], nulls)
        if c.kind == K_BOOL:
            values = pa.py_buffer(np.packbits(fixed[i], bitorder="little"))
            return pa.Array.from_buffers(pa.bool_(), n, [bitmap, values], nulls)
        if c.kind == K_ENUM:
            idx = pa.Array.from_buffers(pa.int32(), n, [bitmap, pa.py_buffer(fixed[i])], nulls)
            return pa.DictionaryArray.from_arrays(idx, pa.array(c.symbols,
                                                                pa.string())).dictionary_decode()
        return pa.Array.from_buffers(c.type, n, [bitmap, pa.py_buffer(fixed[i])], nulls)
