"""Primitive wire types: varints, fixed-width integers, (compact, nullable) strings, bytes and
arrays, uuids, and tagged fields in the schema engine."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gregor.protocol.primitives import (
    DecodeError, Reader, Writer, decode_uvarint, decode_varint, encode_uvarint, encode_varint,
    zigzag_decode, zigzag_encode,
)
from gregor.protocol.schema import Api, F, NULL


# -- varints -----------------------------------------------------------------------------------

@pytest.mark.parametrize("value, wire", [
    (0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"), (300, b"\xac\x02"),
    (16383, b"\xff\x7f"), (16384, b"\x80\x80\x01"), ((1 << 32) - 1, b"\xff\xff\xff\xff\x0f"),
])
def test_unsigned_varint_known_encodings(value, wire):
    assert encode_uvarint(value) == wire
    assert decode_uvarint(wire, 0) == (value, len(wire))


@pytest.mark.parametrize("value, wire", [
    (0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-2, b"\x03"), (63, b"\x7e"), (-64, b"\x7f"),
    (64, b"\x80\x01"), ((1 << 31) - 1, b"\xfe\xff\xff\xff\x0f"), (-(1 << 31), b"\xff\xff\xff\xff\x0f"),
])
def test_zigzag_varint_known_encodings(value, wire):
    assert encode_varint(value) == wire
    assert Reader(wire).varint() == value


def test_varlong_extremes():
    for value in (-(1 << 63), (1 << 63) - 1, -1, 1 << 40):
        wire = encode_varint(value)
        assert len(wire) <= 10
        r = Reader(wire)
        assert r.varlong() == value and r.remaining() == 0
    assert len(encode_varint(-(1 << 63))) == 10


@given(st.integers(-(1 << 63), (1 << 63) - 1))
@settings(max_examples=200)
def test_zigzag_round_trip(n):
    assert zigzag_decode(zigzag_encode(n)) == n
    assert decode_varint(encode_varint(n), 0)[0] == n


def test_negative_unsigned_varint_is_refused():
    with pytest.raises(ValueError):
        encode_uvarint(-1)


def test_truncated_varint():
    with pytest.raises(DecodeError, match="truncated"):
        Reader(b"\x80\x80").uvarint()
    with pytest.raises(DecodeError):
        Reader(b"").varint()


def test_overlong_varints():
    # a 32-bit varint takes at most 5 bytes, a 64-bit one at most 10
    with pytest.raises(DecodeError, match="longer than 5"):
        Reader(b"\x80" * 5 + b"\x01").uvarint()
    with pytest.raises(DecodeError, match="longer than 5"):
        Reader(b"\xff" * 6).varint()
    with pytest.raises(DecodeError, match="longer than 10"):
        Reader(b"\x80" * 10 + b"\x01").varlong()
    # an endless run of continuation bytes stops at the bound, not at the end of the input
    with pytest.raises(DecodeError, match="longer than 10"):
        decode_uvarint(b"\xff" * 1_000_000, 0)


def test_varint_respects_reader_end():
    r = Reader(b"\x80\x01", 0, 1)  # the second byte is outside this reader's window
    with pytest.raises(DecodeError):
        r.uvarint()


# -- fixed width -------------------------------------------------------------------------------

def test_fixed_width_round_trip_and_byte_order():
    w = Writer()
    w.int8(-2), w.int16(-300), w.int32(1 << 30), w.int64(-(1 << 62)), w.uint16(65535)
    w.uint32((1 << 32) - 1), w.float64(1.5), w.boolean(True), w.boolean(False)
    data = w.getvalue()
    assert data[1:3] == struct.pack(">h", -300)
    r = Reader(data)
    assert [r.int8(), r.int16(), r.int32(), r.int64(), r.uint16(), r.uint32(), r.float64(),
            r.boolean(), r.boolean()] == [-2, -300, 1 << 30, -(1 << 62), 65535, (1 << 32) - 1,
                                          1.5, True, False]
    assert r.remaining() == 0


def test_any_nonzero_byte_is_true():
    assert Reader(b"\x07").boolean() is True


@pytest.mark.parametrize("method, size", [("int8", 1), ("int16", 2), ("int32", 4), ("int64", 8),
                                          ("uint16", 2), ("uint32", 4), ("float64", 8),
                                          ("uuid", 16)])
def test_fixed_width_truncated(method, size):
    with pytest.raises(DecodeError):
        getattr(Reader(b"\x00" * (size - 1)), method)()


def test_uuid():
    import uuid
    u = uuid.uuid4()
    w = Writer()
    w.uuid(u), w.uuid(u.bytes), w.uuid(None)
    r = Reader(w.getvalue())
    assert r.uuid() == u.bytes and r.uuid() == u.bytes and r.uuid() == bytes(16)
    with pytest.raises(ValueError):
        Writer().uuid(b"short")


# -- strings, bytes, arrays -------------------------------------------------------------------

@pytest.mark.parametrize("compact", [False, True])
def test_strings(compact):
    w = Writer()
    w.string("héllo", compact), w.string("", compact), w.string(None, compact, nullable=True)
    r = Reader(w.getvalue())
    assert r.string(compact) == "héllo"
    assert r.string(compact) == ""
    assert r.string(compact, nullable=True) is None
    assert r.remaining() == 0


def test_string_wire_forms():
    w = Writer()
    w.string("ab"), w.string("ab", True), w.string(None, False, True), w.string(None, True, True)
    assert w.getvalue() == b"\x00\x02ab" + b"\x03ab" + b"\xff\xff" + b"\x00"


def test_null_in_non_nullable_string():
    with pytest.raises(DecodeError):
        Reader(b"\xff\xff").string()
    with pytest.raises(DecodeError):
        Reader(b"\x00").string(compact=True)
    with pytest.raises(ValueError):
        Writer().string(None)


def test_string_lengths():
    with pytest.raises(DecodeError):
        Reader(b"\xff\xfe").string(nullable=True)  # -2 is never valid
    with pytest.raises(DecodeError):
        Reader(b"\x00\x05abc").string()  # says 5, has 3
    with pytest.raises(DecodeError, match="UTF-8"):
        Reader(b"\x00\x01\xff").string()
    with pytest.raises(ValueError, match="32767"):
        Writer().string("x" * 40000)
    w = Writer()
    w.string("x" * 40000, compact=True)  # compact strings have no 16-bit limit
    assert Reader(w.getvalue()).string(compact=True) == "x" * 40000


@pytest.mark.parametrize("compact", [False, True])
def test_bytes(compact):
    w = Writer()
    w.bytes_(b"\x00\x01", compact), w.bytes_(b"", compact), w.bytes_(None, compact, True)
    r = Reader(w.getvalue())
    assert r.bytes_(compact) == b"\x00\x01"
    assert r.bytes_(compact) == b""
    assert r.bytes_(compact, True) is None
    expected = b"\x03\x00\x01\x01\x00" if compact else (
        b"\x00\x00\x00\x02\x00\x01" + b"\x00\x00\x00\x00" + b"\xff\xff\xff\xff")
    assert w.getvalue() == expected


def test_bytes_hostile_lengths():
    with pytest.raises(DecodeError):
        Reader(b"\x7f\xff\xff\xff").bytes_()  # 2 GiB announced, nothing there
    with pytest.raises(DecodeError):
        Reader(b"\xff\xff\xff\xfe").bytes_(nullable=True)  # -2
    with pytest.raises(DecodeError):
        Reader(b"\xff\xff\xff\xff\x0f").bytes_(compact=True)  # 4 GiB announced


def test_array_counts():
    w = Writer()
    w.array_count(3), w.array_count(-1), w.array_count(3, True), w.array_count(-1, True)
    assert w.getvalue() == b"\x00\x00\x00\x03\xff\xff\xff\xff\x04\x00"
    r = Reader(w.getvalue() + b"\x00" * 6)
    assert r.array_count() == 3
    assert r.array_count(nullable=True) == -1
    assert r.array_count(True) == 3
    assert r.array_count(True, nullable=True) == -1


def test_absurd_array_counts():
    # every element takes at least one byte, so a count above the bytes left is a lie
    with pytest.raises(DecodeError, match="cannot fit"):
        Reader(b"\x7f\xff\xff\xff" + b"\x00" * 10).array_count()
    with pytest.raises(DecodeError, match="cannot fit"):
        Reader(b"\xff\xff\xff\xff\x07").array_count(compact=True)
    with pytest.raises(DecodeError):
        Reader(b"\xff\xff\xff\xff").array_count()  # null where null is not allowed
    with pytest.raises(DecodeError):
        Reader(b"\x80\x00\x00\x00").array_count(nullable=True)  # negative, not -1


def test_reader_window():
    r = Reader(b"abcdef", 2, 4)
    assert r.remaining() == 2
    assert r.raw(2) == b"cd"
    with pytest.raises(DecodeError):
        r.raw(1)
    with pytest.raises(DecodeError):
        Reader(b"abc").raw(-1)


def test_reader_accepts_memoryview():
    mv = memoryview(b"\x00\x02hi\x00\x00\x00\x01")
    r = Reader(mv)
    assert r.string() == "hi" and r.int32() == 1


# -- tagged fields through the schema engine -------------------------------------------------

_TAGGED = Api(key=999, name="Tagged", valid=(0, 1), flexible=1, request=[
    F("plain", "int32"),
    F("note", "string", v="1+", nullable="1+", tagged="1+", tag=0, default=NULL),
    F("epoch", "int32", v="1+", tagged="1+", tag=5, default=-1),
], response=[])


def test_tagged_fields_written_only_when_not_default():
    codec = _TAGGED.request_codec(1)
    assert codec.encode({"plain": 1}) == b"\x00\x00\x00\x01\x00"
    wire = codec.encode({"plain": 1, "epoch": 7})
    assert wire == b"\x00\x00\x00\x01" + b"\x01" + b"\x05\x04" + b"\x00\x00\x00\x07"
    assert codec.decode(wire) == {"plain": 1, "note": None, "epoch": 7}
    both = codec.encode({"plain": 1, "note": "x", "epoch": 7})
    assert codec.decode(both) == {"plain": 1, "note": "x", "epoch": 7}
    assert both[4] == 2 and both[5] == 0  # two tags, in ascending order: tag 0 first


def test_tagged_fields_absent_in_non_flexible_versions():
    codec = _TAGGED.request_codec(0)
    assert codec.encode({"plain": 1, "epoch": 7}) == b"\x00\x00\x00\x01"
    assert codec.decode(b"\x00\x00\x00\x01") == {"plain": 1, "note": None, "epoch": -1}


def test_unknown_tags_are_skipped():
    wire = (b"\x00\x00\x00\x01" + b"\x03" + b"\x02\x03abc" + b"\x05\x04\x00\x00\x00\x09"
            + b"\x40\x00")
    assert _TAGGED.request_codec(1).decode(wire) == {"plain": 1, "note": None, "epoch": 9}


def test_tagged_field_problems_are_decode_errors():
    codec = _TAGGED.request_codec(1)
    with pytest.raises(DecodeError, match="order"):
        codec.decode(b"\x00\x00\x00\x01\x02\x05\x04\x00\x00\x00\x09\x00\x01\x00")
    with pytest.raises(DecodeError):  # size runs past the end
        codec.decode(b"\x00\x00\x00\x01\x01\x07\x09ab")
    with pytest.raises(DecodeError, match="declares"):  # int32 in a 6-byte slot
        codec.decode(b"\x00\x00\x00\x01\x01\x05\x06\x00\x00\x00\x09\x00\x00")
    with pytest.raises(DecodeError):  # more tags announced than bytes
        codec.decode(b"\x00\x00\x00\x01\x7f")
    with pytest.raises(DecodeError, match="trailing"):
        codec.decode(b"\x00\x00\x00\x01\x00\x00")
