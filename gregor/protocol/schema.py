"""One engine that encodes and decodes every Kafka message from a declarative description.

A message is a list of fields (`F`), each with the versions it exists in, the versions in which it
may be null, and (for flexible versions) an optional tag. `Api` holds the request and response
descriptions of one API key. For each (api, version, direction) the field list is compiled once
into closures, so the per-message cost is a loop over prepared functions, not schema lookups.

Decoded messages are plain dicts keyed by snake_case field names; every field the schema knows
for that version is present (absent fields get their defaults). Encoding accepts any Mapping;
missing keys take the field's default.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field as _dc_field
from typing import Any, Callable

from .primitives import DecodeError, Reader, Writer, ZERO_UUID

INF = 1 << 15  # "version N and up": larger than any version an int16 can carry


class _Null:
    """Marks a field whose declared default is null (F(..., default=NULL))."""

    def __repr__(self):
        return "NULL"


NULL = _Null()


def parse_versions(spec: str | None) -> tuple[int, int] | None:
    """'3+' -> (3, INF); '0-7' -> (0, 7); '2' -> (2, 2); None/'none' -> None."""
    if spec is None or spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), INF
    if "-" in spec:
        lo, hi = spec.split("-")
        return int(lo), int(hi)
    return int(spec), int(spec)


def _in(rng: tuple[int, int] | None, v: int) -> bool:
    return rng is not None and rng[0] <= v <= rng[1]


PRIMITIVES = {"bool", "int8", "int16", "int32", "int64", "uint16", "uint32", "float64",
              "string", "bytes", "records", "uuid"}


@dataclass
class F:
    """One field. type is a primitive name, '[]<primitive>', '[]' (array of struct, with
    fields) or 'struct' (with fields)."""

    name: str
    type: str
    v: str = "0+"
    nullable: str | None = None
    tagged: str | None = None
    tag: int | None = None
    default: Any = None
    fields: list["F"] | None = None
    versions: tuple[int, int] | None = _dc_field(init=False, repr=False)
    nullable_versions: tuple[int, int] | None = _dc_field(init=False, repr=False)
    tagged_versions: tuple[int, int] | None = _dc_field(init=False, repr=False)

    def __post_init__(self):
        self.versions = parse_versions(self.v)
        self.nullable_versions = parse_versions(self.nullable)
        self.tagged_versions = parse_versions(self.tagged)
        if self.tagged_versions is not None and self.tag is None:
            raise ValueError(f"tagged field {self.name} needs a tag")
        is_struct = self.type in ("[]", "struct")
        if is_struct != (self.fields is not None):
            raise ValueError(f"field {self.name}: fields go with '[]' or 'struct' types only")
        if not is_struct:
            base = self.type[2:] if self.type.startswith("[]") else self.type
            if base not in PRIMITIVES:
                raise ValueError(f"field {self.name}: unknown type {self.type!r}")


# -- defaults ---------------------------------------------------------------------------

def _default_factory(f: F, v: int) -> Callable[[], Any]:
    if f.default is NULL:
        return lambda: None
    if f.default is not None:
        d = f.default
        return lambda: d
    t = f.type
    if t.startswith("[]"):
        return list
    if t == "struct":
        sub = _struct_defaults(f.fields, v)
        return sub
    if t == "bool":
        return lambda: False
    if t == "string":
        return lambda: ""
    if t in ("bytes", "records"):
        return lambda: b""
    if t == "uuid":
        return lambda: ZERO_UUID
    if t == "float64":
        return lambda: 0.0
    return lambda: 0


def _struct_defaults(fields: list[F], v: int) -> Callable[[], dict]:
    facs = [(f.name, _default_factory(f, v)) for f in fields]
    return lambda: {n: fac() for n, fac in facs}


# -- decoders -----------------------------------------------------------------------------

_SIMPLE_READ = {
    "bool": Reader.boolean, "int8": Reader.int8, "int16": Reader.int16, "int32": Reader.int32,
    "int64": Reader.int64, "uint16": Reader.uint16, "uint32": Reader.uint32,
    "float64": Reader.float64, "uuid": Reader.uuid,
}


def _prim_reader(t: str, flex: bool, nullable: bool) -> Callable[[Reader], Any]:
    if t in _SIMPLE_READ:
        return _SIMPLE_READ[t]
    if t == "string":
        return lambda r: r.string(flex, nullable)
    if t == "bytes":
        return lambda r: r.bytes_(flex, nullable)
    if t == "records":
        return lambda r: r.records(flex)
    raise AssertionError(t)


def _field_reader(f: F, v: int, flex: bool) -> Callable[[Reader], Any]:
    nullable = _in(f.nullable_versions, v)
    t = f.type
    if t == "struct":
        sub = compile_decoder(f.fields, v, flex)
        if nullable:
            def read_nullable_struct(r):
                return None if r.int8() < 0 else sub(r)
            return read_nullable_struct
        return sub
    if t.startswith("[]"):
        elem = compile_decoder(f.fields, v, flex) if t == "[]" else _prim_reader(t[2:], flex, False)

        def read_array(r):
            n = r.array_count(flex, nullable)
            if n < 0:
                return None
            return [elem(r) for _ in range(n)]
        return read_array
    return _prim_reader(t, flex, nullable)


def compile_decoder(fields: list[F], v: int, flex: bool) -> Callable[[Reader], dict]:
    plain: list[tuple[str, Callable]] = []
    absent: list[tuple[str, Callable]] = []
    tagged: dict[int, tuple[str, Callable]] = {}
    for f in fields:
        if not _in(f.versions, v):
            absent.append((f.name, _default_factory(f, v)))
        elif flex and _in(f.tagged_versions, v):
            tagged[f.tag] = (f.name, _field_reader(f, v, flex))
            absent.append((f.name, _default_factory(f, v)))
        else:
            plain.append((f.name, _field_reader(f, v, flex)))

    def decode(r: Reader) -> dict:
        out = {n: fac() for n, fac in absent} if absent else {}
        for name, rd in plain:
            out[name] = rd(r)
        if flex:
            _read_tagged(r, tagged, out)
        return out
    return decode


def _read_tagged(r: Reader, known: dict, out: dict) -> None:
    n = r.uvarint()
    if n > r.remaining():
        raise DecodeError(f"{n} tagged fields cannot fit in {r.remaining()} bytes")
    last = -1
    for _ in range(n):
        tag = r.uvarint()
        size = r.uvarint()
        if tag <= last:
            raise DecodeError("tagged fields out of order")
        last = tag
        start = r._need(size)
        entry = known.get(tag)
        if entry is not None:
            sub = Reader(r.buf, start, start + size)
            out[entry[0]] = entry[1](sub)
            if sub.pos != sub.end:
                raise DecodeError(f"tagged field {tag} declares {size} bytes but its value "
                                  f"uses {sub.pos - start}")


# -- encoders -----------------------------------------------------------------------------

_SIMPLE_WRITE = {
    "bool": Writer.boolean, "int8": Writer.int8, "int16": Writer.int16, "int32": Writer.int32,
    "int64": Writer.int64, "uint16": Writer.uint16, "uint32": Writer.uint32,
    "float64": Writer.float64, "uuid": Writer.uuid,
}


def _prim_writer(t: str, flex: bool, nullable: bool) -> Callable[[Writer, Any], None]:
    if t in _SIMPLE_WRITE:
        return _SIMPLE_WRITE[t]
    if t == "string":
        return lambda w, x: w.string(x, flex, nullable)
    if t == "bytes":
        return lambda w, x: w.bytes_(x, flex, nullable)
    if t == "records":
        return lambda w, x: w.bytes_(x, flex, True)
    raise AssertionError(t)


def _field_writer(f: F, v: int, flex: bool) -> Callable[[Writer, Any], None]:
    nullable = _in(f.nullable_versions, v)
    t = f.type
    if t == "struct":
        sub = compile_encoder(f.fields, v, flex)
        if nullable:
            def write_nullable_struct(w, x):
                if x is None:
                    w.int8(-1)
                else:
                    w.int8(1)
                    sub(w, x)
            return write_nullable_struct
        return sub
    if t.startswith("[]"):
        elem = compile_encoder(f.fields, v, flex) if t == "[]" else _prim_writer(t[2:], flex, False)

        def write_array(w, xs):
            if xs is None:
                if not nullable:
                    raise ValueError(f"field {f.name} is not nullable in version {v}")
                w.array_count(-1, flex)
                return
            w.array_count(len(xs), flex)
            for x in xs:
                elem(w, x)
        return write_array
    return _prim_writer(t, flex, nullable)


def compile_encoder(fields: list[F], v: int, flex: bool) -> Callable[[Writer, Any], None]:
    plain: list[tuple[str, Callable, Callable]] = []
    tagged: list[tuple[int, str, Callable, Callable]] = []
    for f in fields:
        if not _in(f.versions, v):
            continue
        fac = _default_factory(f, v)
        if flex and _in(f.tagged_versions, v):
            tagged.append((f.tag, f.name, _field_writer(f, v, flex), fac))
        else:
            plain.append((f.name, _field_writer(f, v, flex), fac))
    tagged.sort(key=lambda t: t[0])

    def encode(w: Writer, obj) -> None:
        try:
            get = obj.get
        except AttributeError:
            raise EncodeError(f"expected a mapping of field names, got {type(obj).__name__}") \
                from None
        for name, wr, fac in plain:
            x = get(name, _MISSING)
            try:
                wr(w, fac() if x is _MISSING else x)
            except _ENCODE_FAILURES as e:
                raise EncodeError(f"field {name!r}: {e}") from e
        if flex:
            present = []
            for tag, name, wr, fac in tagged:
                x = get(name, _MISSING)
                if x is _MISSING or x is None or x == fac():
                    continue
                sub = Writer()
                try:
                    wr(sub, x)
                except _ENCODE_FAILURES as e:
                    raise EncodeError(f"field {name!r}: {e}") from e
                present.append((tag, sub.buf))
            w.uvarint(len(present))
            for tag, data in present:
                w.uvarint(tag)
                w.uvarint(len(data))
                w.raw(data)
    return encode


_MISSING = object()


class EncodeError(ValueError):
    """A message that cannot be encoded; the text names the field path, e.g.
    "field 'topics': field 'partitions': field 'index': required argument is not an integer"."""


# What a wrong value makes the primitive writers raise (struct.error for out-of-range or
# non-integer numbers, TypeError/AttributeError for wrong types, ValueError for None where
# not nullable or a too-long string).
_ENCODE_FAILURES = (struct.error, TypeError, ValueError, AttributeError, OverflowError)


# -- the API description ----------------------------------------------------------------------

class Codec:
    """Encoder and decoder of one message at one version."""

    __slots__ = ("version", "flexible", "_enc", "_dec")

    def __init__(self, fields: list[F], version: int, flexible: bool):
        self.version = version
        self.flexible = flexible
        self._enc = compile_encoder(fields, version, flexible)
        self._dec = compile_decoder(fields, version, flexible)

    def encode(self, obj, w: Writer | None = None) -> bytes:
        own = w is None
        if own:
            w = Writer()
        self._enc(w, obj)
        return bytes(w.buf) if own else b""

    def decode(self, data, strict: bool = True) -> dict:
        r = data if isinstance(data, Reader) else Reader(data)
        out = self._dec(r)
        if strict and not isinstance(data, Reader) and r.pos != r.end:
            raise DecodeError(f"{r.end - r.pos} trailing bytes after message")
        return out


@dataclass
class Api:
    key: int
    name: str
    valid: tuple[int, int]
    flexible: int | None  # first flexible version, or None
    request: list[F]
    response: list[F]
    _cache: dict = _dc_field(default_factory=dict, repr=False)

    def is_flexible(self, version: int) -> bool:
        return self.flexible is not None and version >= self.flexible

    def supports(self, version: int) -> bool:
        return self.valid[0] <= version <= self.valid[1]

    def _codec(self, which: str, version: int) -> Codec:
        k = (which, version)
        c = self._cache.get(k)
        if c is None:
            if not self.supports(version):
                raise ValueError(f"{self.name} version {version} is outside {self.valid}")
            fields = self.request if which == "request" else self.response
            c = self._cache[k] = Codec(fields, version, self.is_flexible(version))
        return c

    def request_codec(self, version: int) -> Codec:
        return self._codec("request", version)

    def response_codec(self, version: int) -> Codec:
        return self._codec("response", version)

    # Header versions (KIP-482): flexible requests use header v2, flexible responses v1;
    # ApiVersions responses always use header v0 so any client can parse them.
    def request_header_version(self, version: int) -> int:
        return 2 if self.is_flexible(version) else 1

    def response_header_version(self, version: int) -> int:
        if self.key == 18:
            return 0
        return 1 if self.is_flexible(version) else 0
