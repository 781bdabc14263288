"""Share groups' membership in `__consumer_offsets`: the records' bytes against Kafka's
schemas written out by hand, replay, and (in-process broker on a manual clock) a share group
that keeps its epoch, members and assignment across a restart, session expiry of a member that
never comes back, leave and DeleteGroups tombstones."""
import struct

from gregor.broker.group import log_records as L
from gregor.broker.share import group_records as R
from gregor.broker.share.membership import ShareMember
from gregor.testing import Broker

from .wire_share import Member, create_topic, port_of

SESSION_S = 45       # group.share.session.timeout.ms default
TID = bytes(range(16))


def _s(text: str) -> bytes:                 # non-flexible string: int16 length
    return struct.pack(">h", len(text)) + text.encode()


def _cs(text: str) -> bytes:                # compact string: uvarint length + 1
    return bytes([len(text) + 1]) + text.encode()


# -- bytes -------------------------------------------------------------------------------------

def test_group_metadata_key_and_value_bytes():
    # ShareGroupMetadataKey: record type 11, GroupId string
    assert R.encode_key(R.GROUP_METADATA, "g1") == b"\x00\x0b" + _s("g1")
    key, value = R.group_epoch_record("g1", 7, -2)
    assert key == b"\x00\x0b" + _s("g1")
    # value version 0, Epoch int32, MetadataHash int64, empty tagged fields
    assert value == b"\x00\x00" + struct.pack(">iq", 7, -2) + b"\x00"


def test_member_key_and_value_bytes():
    m = ShareMember("m1", client_id="cid", client_host="/h", rack_id=None,
                    subscribed=("a", "b"))
    key, value = R.member_record("g", m)
    assert key == b"\x00\x0a" + _s("g") + _s("m1")        # type 10: GroupId, MemberId
    # RackId (nullable compact string: 0 = null), ClientId, ClientHost,
    # SubscribedTopicNames (compact array of compact strings), tags
    assert value == b"\x00\x00" + b"\x00" + _cs("cid") + _cs("/h") + \
        b"\x03" + _cs("a") + _cs("b") + b"\x00"
    assert R.decode_value(R.MEMBER_METADATA, value) == {
        "rack_id": None, "client_id": "cid", "client_host": "/h",
        "subscribed_topic_names": ["a", "b"]}


def test_current_and_target_assignment_bytes():
    m = ShareMember("m", epoch=5, previous_epoch=4, assignment={TID: [2, 0]})
    key, value = R.current_record("g", m)
    assert key == b"\x00\x0e" + _s("g") + _s("m")         # type 14
    tp = b"\x02" + TID + b"\x03" + struct.pack(">ii", 0, 2) + b"\x00"    # one TopicPartitions
    # MemberEpoch, PreviousMemberEpoch, State int8 (0 stable), AssignedPartitions, tags
    assert value == b"\x00\x00" + struct.pack(">iib", 5, 4, 0) + tp + b"\x00"
    key, value = R.target_record("g", "m", {TID: [0, 2]})
    assert key == b"\x00\x0d" + _s("g") + _s("m")         # type 13
    assert value == b"\x00\x00" + tp + b"\x00"
    key, value = R.target_epoch_record("g", 5)
    assert key == b"\x00\x0c" + _s("g")                   # type 12
    assert value == b"\x00\x00" + struct.pack(">i", 5) + b"\x00"


def test_state_partition_metadata_bytes():
    key, value = R.state_partitions_record("g", {TID: ("t", {1, 0}, 99)})
    assert key == b"\x00\x0f" + _s("g")                   # type 15
    info = TID + _cs("t") + b"\x03" + struct.pack(">ii", 0, 1) + struct.pack(">q", 99) + b"\x00"
    # InitializingTopics (empty), InitializedTopics (one), DeletingTopics (empty), tags
    assert value == b"\x00\x00" + b"\x01" + b"\x02" + info + b"\x01" + b"\x00"


def test_offsets_topic_keys_decode_share_records():
    k = L.decode_key(R.encode_key(R.CURRENT_MEMBER, "g", "m"))
    assert k == R.ShareKey(R.CURRENT_MEMBER, "g", "m")
    assert L.decode_key(R.encode_key(R.PARTITION_METADATA, "g")) == \
        R.ShareKey(R.PARTITION_METADATA, "g")


def test_replay_last_record_wins_and_tombstones_remove():
    recs: dict = {}
    m = ShareMember("m", subscribed=("t",), epoch=3, previous_epoch=2, assignment={TID: [0]})
    for key, value in [R.group_epoch_record("g", 3, 11), R.member_record("g", m),
                       R.target_record("g", "m", {TID: [0]}), R.target_epoch_record("g", 3),
                       R.current_record("g", m),
                       R.state_partitions_record("g", {TID: ("t", {0}, 5)})]:
        R.replay(recs, L.decode_key(key), value)
    assert recs["epoch"] == 3 and recs["hash"] == 11 and recs["target_epoch"] == 3
    assert recs["target"]["m"] == {TID: [0]}
    assert recs["current"]["m"]["member_epoch"] == 3
    assert recs["initialized"] == {TID: ("t", {0}, 5)}
    for key, value in R.member_tombstones("g", "m"):
        R.replay(recs, L.decode_key(key), value)
    assert not recs["members"] and not recs["target"] and not recs["current"]
    for key, value in R.group_tombstones("g", []):
        R.replay(recs, L.decode_key(key), value)
    assert recs.get("epoch") is None


# -- across a restart (in-process broker, manual clock) ---------------------------------------

def _describe(client, group="g") -> dict:
    return client.request("ShareGroupDescribe", 1, {
        "group_ids": [group], "include_authorized_operations": False})["groups"][0]


def _list(client) -> list:
    r = client.request("ListGroups", 5, {"states_filter": [], "types_filter": ["share"]})
    return [(g["group_id"], g["group_state"]) for g in r["groups"]]


def test_members_keep_their_epochs_and_assignment_across_a_restart():
    with Broker(clock="manual") as b:
        m1 = Member(b, "g", ["t"])
        tid = create_topic(m1.client, "t", 2)
        m2 = Member(b, "g", ["t"])
        m1.heartbeat()
        m2.heartbeat()
        m1.heartbeat()
        assert m1.epoch == m2.epoch == 2
        before = _describe(m1.client)
        b.restart()
        m1.client = Member(b, "g", ["t"]).client
        m2.client = Member(b, "g", ["t"]).client
        after = _describe(m1.client)
        assert after["error_code"] == 0 and after["group_epoch"] == 2
        assert after["assignment_epoch"] == 2
        key = lambda g: sorted((x["member_id"], x["member_epoch"],          # noqa: E731
                                str(x["assignment"])) for x in g["members"])
        assert key(after) == key(before)
        assert _list(m1.client) == [("g", "Stable")]
        r = m1.heartbeat()                     # carries on: no UNKNOWN_MEMBER_ID, same epoch
        assert r["error_code"] == 0 and r["member_epoch"] == 2
        assert m2.heartbeat()["member_epoch"] == 2
        # a third member joins: the epoch goes on from the restored one
        m3 = Member(b, "g", ["t"])
        assert m3.heartbeat()["member_epoch"] == 3
        assert m3.assignment and m3.assignment[0]["topic_id"] == tid


def test_a_member_that_never_comes_back_is_removed_after_its_session_timeout():
    with Broker(clock="manual") as b:
        m1 = Member(b, "g", ["t"])
        create_topic(m1.client, "t", 1)
        m2 = Member(b, "g", ["t"])
        m1.heartbeat()
        m2.heartbeat()
        b.restart()
        m1.client = Member(b, "g", ["t"]).client
        b.clock.advance(SESSION_S - 5)
        assert m1.heartbeat()["error_code"] == 0           # m1 keeps its session alive
        b.clock.advance(5.001)                              # m2's timer started at load
        d = _describe(m1.client)
        assert [x["member_id"] for x in d["members"]] == [m1.member_id]
        assert d["group_epoch"] == 3
        b.restart()                                         # and its removal was written
        c = Member(b, "g", ["t"]).client
        d = _describe(c)
        assert [x["member_id"] for x in d["members"]] == [m1.member_id]
        assert d["group_epoch"] == 3


def test_left_members_and_deleted_groups_stay_gone_after_a_restart():
    with Broker(clock="manual") as b:
        m = Member(b, "g", ["t"])
        create_topic(m.client, "t", 1)
        m.heartbeat()
        m.heartbeat(epoch=-1)
        b.restart()
        c = Member(b, "g", ["t"]).client
        d = _describe(c)
        assert d["error_code"] == 0 and d["group_state"] == "Empty" and d["members"] == []
        assert d["group_epoch"] == 2
        assert _list(c) == [("g", "Empty")]
        assert c.request("DeleteGroups", 2, {"groups_names": ["g"]})["results"][0][
            "error_code"] == 0
        b.restart()
        c = Member(b, "g", ["t"]).client
        assert _list(c) == []
        assert _describe(c)["error_code"] == 69             # GROUP_ID_NOT_FOUND
        m = Member(b, "g", ["t"])
        assert m.heartbeat()["member_epoch"] == 1            # a new group starts over
        assert port_of(b) > 0


def test_initialized_share_partitions_are_recorded_and_forgotten_by_offset_deletion():
    with Broker(clock="manual") as b:
        m = Member(b, "g", ["t"])
        tid = create_topic(m.client, "t", 2)
        m.heartbeat()
        b.restart()
        group = b.broker.share.membership.groups["g"]
        assert {t: (n, ps) for t, (n, ps, _c) in group.initialized.items()} == \
            {tid: ("t", {0, 1})}
        m = Member(b, "g", ["t"], member_id=m.member_id)
        m.epoch = 1
        assert m.heartbeat(epoch=-1)["error_code"] == 0
        r = m.client.request("DeleteShareGroupOffsets", 0, {"group_id": "g",
                                                            "topics": [{"topic_name": "t"}]})
        assert r["error_code"] == 0 and r["responses"][0]["error_code"] == 0
        b.restart()
        assert b.broker.share.membership.groups["g"].initialized == {}


# -- sans-I/O: the answer waits for the write -------------------------------------------------

class _Timers:
    def call_later(self, ms, fn):
        class T:
            def cancel(self):
                pass
        return T()


class _Meta:
    def topic(self, name):
        return (TID, 1) if name == "t" else None

    def name(self, tid):
        return "t" if tid == TID else None


def _membership(writes):
    from gregor.broker.share.membership import ShareMembership
    return ShareMembership(_Timers(), lambda: 1000, _Meta(),
                           lambda g: {"session_timeout_ms": 45000,
                                      "heartbeat_interval_ms": 5000},
                           10, lambda g, m: None,
                           store=lambda g, records, done: writes.append((records, done)),
                           partition_of=lambda g: 0)


def _hb(ms, member, epoch, out):
    ms.heartbeat({"group_id": "g", "member_id": member, "member_epoch": epoch,
                  "rack_id": None, "subscribed_topic_names": ["t"]}, "c", "h",
                 lambda body: out.append(body), lambda code, msg: out.append(code))


def _kinds(records):
    return [int.from_bytes(k[:2], "big") for k, _v in records]


def test_the_heartbeat_is_answered_once_its_records_are_written():
    writes, out = [], []
    ms = _membership(writes)
    _hb(ms, "m", 0, out)
    assert out == [] and len(writes) == 1              # not answered before the write
    records, done = writes[0]
    assert _kinds(records) == [R.MEMBER_METADATA, R.GROUP_METADATA, R.TARGET_MEMBER,
                               R.TARGET_METADATA, R.STATE_PARTITION_METADATA,
                               R.CURRENT_MEMBER]
    _hb(ms, "m", 1, out)                               # changed nothing: waits for the first
    assert len(writes) == 1 and out == []
    done(0)
    assert [b["member_epoch"] for b in out] == [1, 1]


def test_after_a_failed_write_the_next_write_is_a_snapshot_of_the_group():
    writes, out = [], []
    ms = _membership(writes)
    _hb(ms, "m1", 0, out)
    writes[0][1](0)
    _hb(ms, "m2", 0, out)
    writes[1][1](6)                                    # NOT_LEADER_OR_FOLLOWER
    assert out[-1] == 16                               # NOT_COORDINATOR
    _hb(ms, "m1", 1, out)                              # its next heartbeat writes it all
    kinds = _kinds(writes[2][0])
    assert kinds.count(R.MEMBER_METADATA) == 2 and kinds.count(R.CURRENT_MEMBER) == 2
    assert R.GROUP_METADATA in kinds and R.STATE_PARTITION_METADATA in kinds
    writes[2][1](0)
    assert out[-1]["member_epoch"] == 2


def test_leaving_writes_the_members_tombstones():
    writes, out = [], []
    ms = _membership(writes)
    _hb(ms, "m", 0, out)
    writes[0][1](0)
    _hb(ms, "m", -1, out)
    records = writes[1][0]
    assert [(k, v) for k, v in records if v is None] == R.member_tombstones("g", "m")
    writes[1][1](0)
    assert out[-1]["member_epoch"] == -1
    assert ms.delete("g", lambda code: out.append(("deleted", code))) == 0
    assert all(v is None for _k, v in writes[2][0])
    assert _kinds(writes[2][0])[-3:] == [R.STATE_PARTITION_METADATA, R.TARGET_METADATA,
                                         R.GROUP_METADATA]
    writes[2][1](0)
    assert out[-1] == ("deleted", 0)
