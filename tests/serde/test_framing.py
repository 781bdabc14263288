"""Confluent framing: header bytes, Protobuf message indexes, refusal of unframed bytes."""
import pytest

from gregor.serde.errors import NotFramedError, SerializationError
from gregor.serde.framing import decode_indexes, encode_indexes, frame, parse


def test_header_is_magic_zero_then_big_endian_id():
    assert frame(1, b"\x04Al") == b"\x00\x00\x00\x00\x01\x04Al"
    assert frame(0x01020304, b"") == b"\x00\x01\x02\x03\x04"
    sid, payload = parse(b"\x00\x00\x00\x01\x00abc")
    assert (sid, bytes(payload)) == (256, b"abc")


@pytest.mark.parametrize("data, match", [(b"", "shorter"), (b"\x00\x00\x01", "shorter"),
                                         (b"\x01\x00\x00\x00\x01x", "magic byte 1"),
                                         (b'{"a":1}', "magic byte 123"), (None, "null")])
def test_unframed_bytes_are_refused_with_the_reason(data, match):
    with pytest.raises(NotFramedError, match=match):
        parse(data)


def test_protobuf_indexes_first_message_is_one_zero_byte():
    assert encode_indexes([0]) == b"\x00"
    assert decode_indexes(b"\x00") == ([0], 1)
    # [1, 2]: count 2 -> zigzag 4, then 2 -> 2, 4 -> 4... (zigzag of 1 is 2, of 2 is 4)
    assert encode_indexes([1, 2]) == b"\x04\x02\x04"
    assert decode_indexes(b"\x04\x02\x04rest") == ([1, 2], 3)
    assert decode_indexes(encode_indexes([300, 0, 5])) == ([300, 0, 5], 5)


def test_hostile_index_counts_are_refused():
    with pytest.raises(SerializationError, match="out of range"):
        decode_indexes(encode_indexes(list(range(65))))
    with pytest.raises(SerializationError, match="truncated"):
        decode_indexes(b"\x04\x02")
    with pytest.raises(SerializationError, match="over 10 bytes"):
        decode_indexes(b"\xff" * 12)
