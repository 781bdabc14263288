"""Property-based round trips: every API, every version, request and response.

A message generated from the description is encoded, decoded and must come back equal (fields
that do not exist in that version come back as their defaults), and re-encoding the decoded
message must give the same bytes.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gregor.protocol import messages
from gregor.protocol.primitives import Reader

from tests.protocol.schema_data import all_codecs, codec_id, expected, message_strategy

_CODECS = all_codecs()


@pytest.mark.parametrize("item", _CODECS, ids=[codec_id(c) for c in _CODECS])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip(item, data):
    api, v, which = item
    fields = api.request if which == "request" else api.response
    codec = api.request_codec(v) if which == "request" else api.response_codec(v)
    msg = data.draw(message_strategy(fields, v))
    wire = codec.encode(msg)
    back = codec.decode(wire)
    assert back == expected(fields, v, msg)
    assert codec.encode(back) == wire


def test_every_version_is_covered():
    count = sum(api.valid[1] - api.valid[0] + 1 for api in messages.APIS.values())
    assert len(_CODECS) == 2 * count
    assert count >= 150  # 29 APIs, most with many versions


def test_decoding_from_a_reader_leaves_the_rest():
    """Decoding from a Reader consumes exactly one message (used for framed bodies)."""
    api = messages.api("Heartbeat")
    wire = api.request_codec(3).encode({"group_id": "g", "generation_id": 7, "member_id": "m",
                                        "group_instance_id": None})
    r = Reader(wire + b"tail")
    assert api.request_codec(3).decode(r)["generation_id"] == 7
    assert r.raw(r.remaining()) == b"tail"


def test_encoding_fills_missing_fields_with_defaults():
    api = messages.api("Metadata")
    back = api.request_codec(12).decode(api.request_codec(12).encode({}))
    assert back == {"topics": [], "allow_auto_topic_creation": True,
                    "include_cluster_authorized_operations": False,
                    "include_topic_authorized_operations": False}


def test_unsupported_version_is_refused():
    api = messages.api("Produce")
    with pytest.raises(ValueError, match="outside"):
        api.request_codec(api.valid[1] + 1)
