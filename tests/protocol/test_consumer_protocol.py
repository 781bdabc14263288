"""ConsumerProtocol bytes: round trips for every version, and byte for byte against
kafka-python's independent encoder (what its group members put on the wire)."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gregor.protocol import consumer_protocol as C

topics = st.lists(st.text(alphabet="abcxyz-._", min_size=1, max_size=8), max_size=4, unique=True)
tps = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 50)), max_size=8,
               unique=True)


@given(topics, st.one_of(st.none(), st.binary(max_size=8)), tps, st.integers(-1, 9),
       st.sampled_from([0, 1, 2, 3]))
def test_subscription_round_trip(ts, user_data, owned, gen, version):
    s = C.Subscription(ts, user_data, owned, gen, "rack-1")
    back = C.decode_subscription(C.encode_subscription(s, version))
    assert back.topics == ts and back.user_data == user_data
    assert sorted(back.owned_partitions) == (sorted(owned) if version >= 1 else [])
    assert back.generation_id == (gen if version >= 2 else -1)
    assert back.rack_id == ("rack-1" if version >= 3 else None)


@given(tps, st.one_of(st.none(), st.binary(max_size=8)), st.sampled_from([0, 1, 2, 3]))
def test_assignment_round_trip(parts, user_data, version):
    back = C.decode_assignment(C.encode_assignment(C.Assignment(parts, user_data), version))
    assert sorted(back.partitions) == sorted(parts) and back.user_data == user_data


def test_newer_versions_are_read_as_the_highest_known():
    data = C.encode_subscription(C.Subscription(["t"], b"u", [("t", 1)], 4, "r"))
    newer = struct.pack(">h", 7) + data[2:] + b"\x00\x00future"
    s = C.decode_subscription(newer)
    assert (s.topics, s.owned_partitions, s.generation_id) == (["t"], [("t", 1)], 4)
    assert C.decode_assignment(b"").partitions == []


def test_same_bytes_as_kafka_python():
    kc = pytest.importorskip("kafka.coordinator.consumer")
    theirs = kc.ConsumerProtocolSubscription(0, ["orders", "payments"], b"").encode()
    ours = C.encode_subscription(C.Subscription(["orders", "payments"], b""), 0)
    assert ours == theirs
    theirs = kc.ConsumerProtocolAssignment(0, [("orders", [0, 2]), ("payments", [1])],
                                           b"").encode()
    ours = C.encode_assignment(C.Assignment([("orders", 0), ("orders", 2), ("payments", 1)],
                                            b""), 0)
    assert ours == theirs
    back = kc.ConsumerProtocolAssignment.decode(
        C.encode_assignment(C.Assignment([("t", 3), ("t", 1)], None), 1))
    assert [(t, sorted(p)) for t, p in back.assigned_partitions] == [("t", [1, 3])]
