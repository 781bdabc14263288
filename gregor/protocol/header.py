"""Request/response headers and size-prefixed framing (sans-I/O).

Frames on the wire are a 4-byte big-endian size followed by that many bytes. Headers:
request v0 (api_key, api_version, correlation_id), v1 (+ client_id, a non-compact nullable
string even in flexible versions), v2 (+ tagged fields); response v0 (correlation_id),
v1 (+ tagged fields).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from .primitives import DecodeError, Reader, ViewReader, Writer
from .schema import Api

_SIZE = struct.Struct(">i")
_HDR = struct.Struct(">hhi")


@dataclass(slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None


def peek_request_header(data) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) from the first 8 bytes of a request body."""
    if len(data) < 8:
        raise DecodeError(f"request of {len(data)} bytes is shorter than a header")
    return _HDR.unpack_from(data, 0)


def read_request_header(r: Reader, header_version: int) -> RequestHeader:
    api_key, api_version, corr = r.int16(), r.int16(), r.int32()
    client_id = r.string(False, True) if header_version >= 1 else None
    if header_version >= 2:
        _skip_tagged(r)
    return RequestHeader(api_key, api_version, corr, client_id)


def _skip_tagged(r: Reader) -> None:
    n = r.uvarint()
    if n > r.remaining():
        raise DecodeError("tagged field count exceeds the bytes left")
    for _ in range(n):
        r.uvarint()
        r._need(r.uvarint())


def write_request(w: Writer, api: Api, version: int, correlation_id: int,
                  client_id: str | None, body) -> None:
    """Write a request frame into w: a size placeholder (4 zero bytes; the caller fills it
    in), the request header, the body."""
    w.raw(b"\0\0\0\0")
    w.raw(_HDR.pack(api.key, version, correlation_id))
    hv = api.request_header_version(version)
    if hv >= 1:
        w.string(client_id, False, True)
    if hv >= 2:
        w.uvarint(0)
    api.request_codec(version).encode(body, w)


def encode_request(api: Api, version: int, correlation_id: int, client_id: str | None,
                   body) -> bytes:
    """A complete size-prefixed request frame."""
    w = Writer()
    write_request(w, api, version, correlation_id, client_id, body)
    _SIZE.pack_into(w.buf, 0, len(w.buf) - 4)
    return bytes(w.buf)


def write_response(w: Writer, api: Api, version: int, correlation_id: int, body) -> None:
    """Write a response frame into w: a size placeholder (4 zero bytes; the caller fills it
    in), the response header, the body."""
    w.raw(b"\0\0\0\0")
    w.int32(correlation_id)
    if api.response_header_version(version) >= 1:
        w.uvarint(0)
    api.response_codec(version).encode(body, w)


def encode_response(api: Api, version: int, correlation_id: int, body) -> bytes:
    """A complete size-prefixed response frame."""
    w = Writer()
    write_response(w, api, version, correlation_id, body)
    _SIZE.pack_into(w.buf, 0, len(w.buf) - 4)
    return bytes(w.buf)


def decode_response(api: Api, version: int, data) -> tuple[int, dict]:
    """(correlation_id, body) from a response frame without its size prefix."""
    _check_version(api, version)
    r = Reader(data)
    corr = r.int32()
    if api.response_header_version(version) >= 1:
        _skip_tagged(r)
    body = api.response_codec(version)._dec(r)
    if r.pos != r.end:
        raise DecodeError(f"{r.end - r.pos} trailing bytes after {api.name} v{version} response")
    return corr, body


def decode_request(api: Api, data, *, view_records: bool = False) -> tuple[RequestHeader, dict]:
    """Header and body of a request frame (without size prefix) whose api_key is api.key.
    view_records: records fields are memoryviews into data instead of copies (data must then
    be immutable: bytes or a view of bytes)."""
    api_key, version, _ = peek_request_header(data)
    if api_key != api.key:
        raise DecodeError(f"request has api_key {api_key}, expected {api.key} ({api.name})")
    _check_version(api, version)
    r = ViewReader(data) if view_records else Reader(data)
    hdr = read_request_header(r, api.request_header_version(version))
    body = api.request_codec(version)._dec(r)
    if r.pos != r.end and not _tolerated_tail(api, version, data, r.end - r.pos):
        raise DecodeError(f"{r.end - r.pos} trailing bytes after {api.name} v{version} request")
    return hdr, body


_METADATA = 3
_ALTER_USER_SCRAM_CREDENTIALS = 51


def _tolerated_tail(api: Api, version: int, data, extra: int) -> bool:
    """librdkafka (2.x) asks for all topics with Metadata v9+ by leaving its 4-byte array
    count placeholder at 0 instead of writing a 1-byte compact null, so such a request is
    3 bytes longer than its schema; and it ends AlterUserScramCredentials v0 with a second
    empty tagged-field section (one 0 byte too many). Kafka ignores what follows a request's
    fields, and so do we in these two cases; every other request must match its schema."""
    if api.key == _ALTER_USER_SCRAM_CREDENTIALS:
        return extra == 1 and bytes(data[-1:]) == b"\x00"
    return api.key == _METADATA and version >= 9 and extra == 3 and \
        bytes(data[-7:-3]) == b"\x00\x00\x00\x00"


def _check_version(api: Api, version: int) -> None:
    """A version outside the API's range cannot be decoded; the broker answers those with
    UNSUPPORTED_VERSION before decoding (peek_request_header gives it the version)."""
    if not api.supports(version):
        raise DecodeError(f"{api.name} v{version} is not supported (valid versions "
                          f"{api.valid[0]}-{api.valid[1]})")


def frame_size(prefix) -> int:
    return _SIZE.unpack_from(prefix, 0)[0]
