"""Request/response headers and framing."""
from __future__ import annotations

import struct

import pytest

from gregor.protocol import messages
from gregor.protocol.header import (
    RequestHeader, decode_request, decode_response, encode_request, encode_response, frame_size,
    peek_request_header,
)
from gregor.protocol.primitives import DecodeError

METADATA = messages.api("Metadata")
API_VERSIONS = messages.api("ApiVersions")
HEARTBEAT = messages.api("Heartbeat")


def test_request_header_v1_layout():
    frame = encode_request(HEARTBEAT, 2, 77, "cli", {"group_id": "g", "generation_id": 1,
                                                     "member_id": "m"})
    assert frame_size(frame) == len(frame) - 4
    body = frame[4:]
    assert body[:8] == struct.pack(">hhi", 12, 2, 77)
    assert body[8:13] == b"\x00\x03cli"  # client_id: int16-length string
    assert peek_request_header(body) == (12, 2, 77)
    hdr, msg = decode_request(HEARTBEAT, body)
    assert hdr == RequestHeader(12, 2, 77, "cli")
    assert msg["group_id"] == "g" and msg["member_id"] == "m"


def test_request_header_v2_keeps_a_classic_client_id_and_adds_tags():
    frame = encode_request(METADATA, 12, 5, "c", {"topics": None})
    body = frame[4:]
    # flexible versions still write client_id as a non-compact string, then a tag count
    assert body[8:11] == b"\x00\x01c"
    assert body[11] == 0
    hdr, msg = decode_request(METADATA, body)
    assert hdr.client_id == "c" and msg["topics"] is None


def test_request_header_with_unknown_tags_and_null_client_id():
    body = struct.pack(">hhi", 3, 12, 9) + b"\xff\xff" + b"\x01\x07\x02zz" + METADATA \
        .request_codec(12).encode({})
    hdr, _ = decode_request(METADATA, body)
    assert hdr == RequestHeader(3, 12, 9, None)


def test_response_header_versions():
    flex = encode_response(METADATA, 9, 3, {})
    assert flex[4:8] == struct.pack(">i", 3) and flex[8] == 0  # v1: tagged fields
    old = encode_response(METADATA, 8, 3, {})
    assert old[4:8] == struct.pack(">i", 3)
    assert flex[9:] == METADATA.response_codec(9).encode({})
    assert old[8:] == METADATA.response_codec(8).encode({})
    assert decode_response(METADATA, 9, flex[4:])[0] == 3
    assert decode_response(METADATA, 8, old[4:])[0] == 3


def test_api_versions_response_header_is_always_v0():
    """So that a client can read the broker's reply whatever version it asked for."""
    body = {"error_code": 0, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}]}
    frame = encode_response(API_VERSIONS, 3, 11, body)
    codec = API_VERSIONS.response_codec(3)
    assert frame[4:] == struct.pack(">i", 11) + codec.encode(body)
    corr, back = decode_response(API_VERSIONS, 3, frame[4:])
    assert corr == 11 and back["api_keys"][0]["max_version"] == 4
    # the request side of ApiVersions v3+ does use header v2
    assert API_VERSIONS.request_header_version(3) == 2
    assert API_VERSIONS.response_header_version(3) == 0
    assert METADATA.response_header_version(9) == 1


@pytest.mark.parametrize("api", sorted(messages.APIS.values(), key=lambda a: a.key),
                         ids=lambda a: a.name)
def test_header_versions_follow_flexibility(api):
    for v in range(api.valid[0], api.valid[1] + 1):
        assert api.request_header_version(v) == (2 if api.is_flexible(v) else 1)
        if api.key != 18:
            assert api.response_header_version(v) == (1 if api.is_flexible(v) else 0)
        frame = encode_request(api, v, v, "id", {})
        hdr, _ = decode_request(api, frame[4:])
        assert (hdr.api_key, hdr.api_version, hdr.correlation_id) == (api.key, v, v)
        resp = encode_response(api, v, -v, {})
        assert decode_response(api, v, resp[4:])[0] == -v


def test_header_decode_errors():
    with pytest.raises(DecodeError):
        peek_request_header(b"\x00\x03\x00")
    good = encode_request(HEARTBEAT, 0, 1, "c", {})[4:]
    with pytest.raises(DecodeError, match="api_key"):
        decode_request(METADATA, good)
    with pytest.raises(DecodeError, match="not supported"):
        decode_request(HEARTBEAT, good[:2] + b"\x00\x63" + good[4:])  # version 99
    with pytest.raises(DecodeError, match="trailing"):
        decode_request(HEARTBEAT, good + b"x")
    with pytest.raises(DecodeError):
        decode_request(HEARTBEAT, good[:-1])
    with pytest.raises(DecodeError):
        decode_response(HEARTBEAT, 4, b"\x00\x00\x00\x01")  # flexible header without tags
    with pytest.raises(DecodeError, match="not supported"):
        decode_response(HEARTBEAT, 9, b"\x00\x00\x00\x01")


# --- records fields as views (what the broker decodes produce requests with) ----------------

PRODUCE = messages.api("Produce")


def _produce_body(version, records_list):
    req = {"transactional_id": None, "acks": 1, "timeout_ms": 1000,
           "topic_data": [{"name": "t", "partition_data": [
               {"index": i, "records": r} for i, r in enumerate(records_list)]}]}
    return encode_request(PRODUCE, version, 1, "c", req)[4:]


@pytest.mark.parametrize("version", [3, 8, 9])
def test_view_records_are_views_of_the_frame_with_the_same_bytes(version):
    batches = [b"x" * 1000, b"", None, bytes(range(256))]
    body = _produce_body(version, batches)
    _, copied = decode_request(PRODUCE, body)
    _, viewed = decode_request(PRODUCE, body, view_records=True)
    got = [pd["records"] for pd in viewed["topic_data"][0]["partition_data"]]
    assert [pd["records"] for pd in copied["topic_data"][0]["partition_data"]] == batches
    assert got[2] is None
    assert all(isinstance(r, memoryview) for i, r in enumerate(got) if i != 2)
    assert [None if r is None else bytes(r) for r in got] == batches
    assert got[0].obj is body                     # no copy: a window on the frame itself


def test_view_records_refuse_what_copies_refuse():
    body = bytearray(_produce_body(8, [b"abc"]))
    at = bytes(body).index(b"abc") - 4
    for bad_len in (-2, 4, 1 << 30):            # invalid, past the end, huge
        struct.pack_into(">i", body, at, bad_len)
        for view in (False, True):
            with pytest.raises(DecodeError):
                decode_request(PRODUCE, bytes(body), view_records=view)


def test_librdkafka_metadata_all_topics_request_with_its_unfinalized_count_decodes():
    # librdkafka 2.16, Metadata v12 for all topics: the topics count is a 4-byte placeholder
    # never finalized (00 00 00 00), then allow_auto_topic_creation=1, include_topic_ops=0,
    # no tags. Kafka reads a null array and ignores the 3 bytes left; so do we.
    api = messages.api("Metadata")
    frame = bytes.fromhex("0003000c00000004000772646b61666b61" "00" "00000000010000")
    _hdr, body = decode_request(api, frame)
    assert body["topics"] is None
    # any other trailing bytes are still refused
    with pytest.raises(DecodeError):
        decode_request(api, bytes.fromhex("0003000c00000004000772646b61666b61" "00"
                                          "01000000" "aa"))
