"""Share groups over the wire against an in-process broker on a manual clock: heartbeats and
assignment, share sessions and their errors, acknowledgements and their errors, lock expiry,
session timeouts, release on disconnect, ApiVersions, ListGroups / DescribeGroups /
DeleteGroups / ShareGroupDescribe, and durability across a restart."""
import pytest

from gregor.protocol.records.batch import decode_batches
from gregor.testing import Broker

from .wire_share import ACCEPT, RELEASE, REJECT, RENEW, Member, acquired, create_topic, part, \
    port_of, produce



def values_of(records) -> list:
    return [r.value for b in decode_batches(records) for r in b.records]


LOCK_S = 30          # group.share.record.lock.duration.ms default
SESSION_S = 45       # group.share.session.timeout.ms default


@pytest.fixture
def broker():
    with Broker(clock="manual") as b:
        yield b


def setup(broker, topic="t", partitions=1, records=10):
    m = Member(broker, "g", [topic])
    tid = create_topic(m.client, topic, partitions)
    if records:
        produce(m.client, topic, [b"v%d" % i for i in range(records)])
    return m, tid


def test_api_versions_advertises_share_apis_and_the_share_version_feature(broker):
    m = Member(broker, "g", ["t"])
    r = m.client.request("ApiVersions", 3, {"client_software_name": "t",
                                            "client_software_version": "1"})
    table = {k["api_key"]: (k["min_version"], k["max_version"]) for k in r["api_keys"]}
    assert table[76] == (1, 1) and table[77] == (1, 1)
    assert table[78] == (1, 2) and table[79] == (1, 2)
    assert {"name": "share.version", "max_version_level": 1, "min_version_level": 1} in \
        r["finalized_features"]


def test_heartbeat_join_assigns_every_member_the_one_partition(broker):
    m1, tid = setup(broker)
    m2 = Member(broker, "g", ["t"])
    r1 = m1.heartbeat()
    assert r1["error_code"] == 0 and r1["member_epoch"] == 1
    assert r1["heartbeat_interval_ms"] == 5000
    assert m1.assignment == [{"topic_id": tid, "partitions": [0]}]
    r2 = m2.heartbeat()
    assert r2["member_epoch"] == 2 and m2.assignment == [{"topic_id": tid, "partitions": [0]}]
    again = m1.heartbeat()
    assert again["member_epoch"] == 2        # moved to the new group epoch
    assert m1.heartbeat()["assignment"] is None     # unchanged: no assignment sent


def test_assignment_spreads_partitions_over_members(broker):
    m1, tid = setup(broker, partitions=4, records=0)
    m2 = Member(broker, "g", ["t"])
    m1.heartbeat()
    m2.heartbeat()
    m1.heartbeat()
    got = [sorted(m.assignment[0]["partitions"]) for m in (m1, m2)]
    assert sorted(p for ps in got for p in ps) == [0, 1, 2, 3] and all(len(g) == 2 for g in got)


@pytest.mark.parametrize("body,code", [
    ({"member_id": ""}, 42),
    ({"member_epoch": 0, "subscribed_topic_names": None}, 42),
    ({"member_epoch": -2}, 42),
    ({"rack_id": ""}, 42),
    ({"member_epoch": 5}, 25),                 # unknown member
])
def test_heartbeat_errors(broker, body, code):
    m = Member(broker, "g", ["t"])
    req = {"group_id": "g", "member_id": m.member_id, "member_epoch": 0, "rack_id": None,
           "subscribed_topic_names": ["t"], **body}
    assert m.client.request("ShareGroupHeartbeat", 1, req)["error_code"] == code


def test_fenced_epoch_and_a_consumer_group_id_are_refused(broker):
    m, _tid = setup(broker)
    m.heartbeat()
    assert m.heartbeat(epoch=m.epoch + 7)["error_code"] == 110       # FENCED_MEMBER_EPOCH
    c = m.client
    join = c.request("JoinGroup", 5, {
        "group_id": "classic", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
        "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}]})
    assert join["error_code"] in (0, 79)        # joined (or MEMBER_ID_REQUIRED first)
    other = Member(broker, "classic", ["t"])
    assert other.heartbeat()["error_code"] == 69   # GROUP_ID_NOT_FOUND: not a share group


def test_share_fetch_acquires_and_a_second_member_gets_nothing_held(broker):
    m1, tid = setup(broker, records=10)
    m2 = Member(broker, "g", ["t"])
    m1.heartbeat()
    m2.heartbeat()
    # share.auto.offset.reset=latest: the 10 records written before are not delivered
    assert acquired(m1.fetch(tid)) == []
    produce(m1.client, "t", [b"a", b"b", b"c"])
    r = m1.fetch(tid)
    assert acquired(r) == [(10, 12, 1)] and r["acquisition_lock_timeout_ms"] == 30000
    assert len(part(r)["records"]) > 0
    assert acquired(m2.fetch(tid)) == []


def test_acks_piggybacked_release_redelivers_and_accept_finishes(broker):
    m1, tid = setup(broker, records=0)
    m2 = Member(broker, "g", ["t"])
    m1.heartbeat()
    m2.heartbeat()
    m1.fetch(tid)
    m2.fetch(tid)
    produce(m1.client, "t", [b"a", b"b", b"c", b"d"])
    assert acquired(m1.fetch(tid)) == [(0, 3, 1)]
    r = m1.fetch(tid, acks=[(0, 0, [ACCEPT]), (1, 1, [RELEASE]), (2, 2, [REJECT])])
    assert part(r)["acknowledge_error_code"] == 0
    assert acquired(r) == [(1, 1, 2)]          # acks first, then acquisition: 1 is back
    assert values_of(part(r)["records"]) == [b"a", b"b", b"c", b"d"]   # its whole batch
    assert part(m1.acknowledge(tid, [(1, 1, [RELEASE])]))["error_code"] == 0
    assert acquired(m2.fetch(tid)) == [(1, 1, 3)]      # released: delivered to m2
    sp = broker.broker.share.partitions[("g", tid, 0)]
    assert sp.start_offset == 1 and sp.archived_total == 1


def test_acknowledging_records_not_held_changes_nothing(broker):
    m1, tid = setup(broker, records=0)
    m2 = Member(broker, "g", ["t"])
    for m in (m1, m2):
        m.heartbeat()
        m.fetch(tid)
    produce(m1.client, "t", [b"a", b"b"])
    m1.fetch(tid)
    r = m2.acknowledge(tid, [(0, 1, [ACCEPT])])         # m1's records
    assert r["error_code"] == 0 and part(r)["error_code"] == 121
    r = m1.acknowledge(tid, [(0, 5, [ACCEPT])])         # past what it holds
    assert part(r)["error_code"] == 121
    assert broker.broker.share.partitions[("g", tid, 0)].start_offset == 0
    assert part(m1.acknowledge(tid, [(0, 1, [ACCEPT])]))["error_code"] == 0


def test_session_epoch_errors(broker):
    m, tid = setup(broker)
    m.heartbeat()
    assert m.fetch(tid, epoch=3)["error_code"] == 122              # no session yet
    assert m.acknowledge(tid, [], epoch=0)["error_code"] == 123    # can't open a session
    r = m.fetch(tid, acks=[(0, 0, [ACCEPT])])                      # acks at epoch 0
    assert r["error_code"] == 42
    m.session_epoch = 0
    assert m.fetch(tid)["error_code"] == 0
    assert m.fetch(tid, epoch=m.session_epoch + 1)["error_code"] == 123
    assert m.fetch(tid)["error_code"] == 0                         # the right one still works
    assert m.fetch(tid, epoch=-1)["error_code"] == 0               # close
    assert m.fetch(tid, epoch=2)["error_code"] == 122


def test_invalid_member_id_and_renew_rules(broker):
    m, tid = setup(broker)
    m.member_id = "x" * 37
    assert m.fetch(tid)["error_code"] == 42
    m.member_id = "ok"
    assert m.fetch(tid, version=2, is_renew_ack=True)["error_code"] == 42  # fetch params set
    assert m.fetch(tid, version=1, acks=[])["error_code"] == 0


def test_renew_keeps_a_lock_and_v1_may_not_renew(broker):
    m1, tid = setup(broker, records=0)
    m1.heartbeat()
    m1.fetch(tid)
    produce(m1.client, "t", [b"a", b"b"])
    m1.fetch(tid)
    r = m1.acknowledge(tid, [(0, 0, [RENEW])])
    assert part(r)["error_code"] == 42                  # RENEW needs v2 and IsRenewAck
    broker.clock.advance(LOCK_S / 2)
    r = m1.acknowledge(tid, [(0, 0, [RENEW])], version=2, renew=True)
    assert part(r)["error_code"] == 0 and r["acquisition_lock_timeout_ms"] == 30000
    broker.clock.advance(LOCK_S / 2 + 0.001)            # offset 1's lock has run out
    sp = broker.broker.share.partitions[("g", tid, 0)]
    assert sp.owner_of(0) == m1.member_id and sp.owner_of(1) is None


def test_strict_record_limit_in_v2(broker):
    m, tid = setup(broker, records=0)
    m.heartbeat()
    m.fetch(tid, version=2)
    produce(m.client, "t", [b"%d" % i for i in range(10)])
    r = m.fetch(tid, version=2, max_records=3, share_acquire_mode=1)
    assert acquired(r) == [(0, 2, 1)]
    assert acquired(m.fetch(tid, version=2, max_records=3)) == [(3, 9, 1)]   # whole batch


def test_lock_expiry_on_the_manual_clock_redelivers(broker):
    m1, tid = setup(broker, records=0)
    m2 = Member(broker, "g", ["t"])
    for m in (m1, m2):
        m.heartbeat()
        m.fetch(tid)
    produce(m1.client, "t", [b"a"])
    assert acquired(m1.fetch(tid)) == [(0, 0, 1)]
    broker.clock.advance(LOCK_S - 1)
    assert acquired(m2.fetch(tid)) == []
    broker.clock.advance(1.001)
    assert acquired(m2.fetch(tid)) == [(0, 0, 2)]
    assert part(m1.acknowledge(tid, [(0, 0, [ACCEPT])]))["error_code"] == 121


def test_delivery_count_limit_archives(broker):
    m, tid = setup(broker, records=0)
    m.heartbeat()
    m.fetch(tid)
    produce(m.client, "t", [b"a"])
    for n in range(1, 6):
        assert acquired(m.fetch(tid)) == [(0, 0, n)]
        m.acknowledge(tid, [(0, 0, [RELEASE])])
    assert acquired(m.fetch(tid)) == []
    assert broker.broker.share.partitions[("g", tid, 0)].start_offset == 1


def test_a_silent_member_is_removed_and_its_records_come_back(broker):
    m1, tid = setup(broker, records=0)
    m2 = Member(broker, "g", ["t"])
    for m in (m1, m2):
        m.heartbeat()
        m.fetch(tid)
    produce(m1.client, "t", [b"a"])
    m1.fetch(tid)
    broker.clock.advance(SESSION_S - 5)
    m2.heartbeat()                       # m2 keeps its session alive; m1 says nothing
    broker.clock.advance(5.001)
    assert m1.heartbeat()["error_code"] == 25          # UNKNOWN_MEMBER_ID: it was removed
    assert acquired(m2.fetch(tid)) == [(0, 0, 2)]


def test_a_closed_connection_releases_its_records_at_once(broker):
    m1, tid = setup(broker, records=0)
    m2 = Member(broker, "g", ["t"])
    for m in (m1, m2):
        m.heartbeat()
        m.fetch(tid)
    produce(m1.client, "t", [b"a"])
    m1.fetch(tid)
    m1.close()
    for _ in range(200):                 # the broker sees the close on its loop
        got = acquired(m2.fetch(tid))
        if got:
            break
    assert got == [(0, 0, 2)]


def test_session_limit(tmp_path):
    with Broker({"group.share.max.share.sessions": 1}) as b:
        m1, tid = setup(b)
        m2 = Member(b, "g", ["t"])
        assert m1.fetch(tid)["error_code"] == 0
        assert m2.fetch(tid)["error_code"] == 133


def test_describe_list_and_delete(broker):
    m, tid = setup(broker)
    m.heartbeat()
    c = m.client
    d = c.request("ShareGroupDescribe", 1, {"group_ids": ["g", "nope"],
                                            "include_authorized_operations": False})
    g, nope = d["groups"]
    assert g["error_code"] == 0 and g["group_state"] == "Stable" and g["group_epoch"] == 1
    assert g["members"][0]["member_id"] == m.member_id
    assert g["members"][0]["assignment"]["topic_partitions"][0]["topic_name"] == "t"
    assert nope["error_code"] == 69
    lst = c.request("ListGroups", 5, {"states_filter": [], "types_filter": ["share"]})
    assert [(x["group_id"], x["group_type"]) for x in lst["groups"]] == [("g", "share")]
    dg = c.request("DescribeGroups", 5, {"groups": ["g"], "include_authorized_operations": False})
    assert dg["groups"][0]["error_code"] == 69       # not a classic group, as Kafka answers
    assert c.request("DeleteGroups", 2, {"groups_names": ["g"]})["results"][0]["error_code"] \
        == 68                                        # NON_EMPTY_GROUP
    m.heartbeat(epoch=-1)
    assert c.request("DeleteGroups", 2, {"groups_names": ["g"]})["results"][0]["error_code"] == 0
    lst = c.request("ListGroups", 5, {"states_filter": [], "types_filter": ["share"]})
    assert lst["groups"] == []


def test_acknowledged_records_stay_acknowledged_after_a_restart(broker):
    m, tid = setup(broker, records=0)
    m.heartbeat()
    m.fetch(tid)
    produce(m.client, "t", [b"%d" % i for i in range(6)])
    assert acquired(m.fetch(tid)) == [(0, 5, 1)]
    m.acknowledge(tid, [(0, 2, [ACCEPT])])
    m.close()
    broker.restart()
    m = Member(broker, "g", ["t"])
    m.heartbeat()
    assert acquired(m.fetch(tid)) == [(3, 5, 2)]       # only the unacknowledged come back
    assert port_of(broker) > 0


def test_share_group_offsets_describe_alter_delete(broker):
    m, tid = setup(broker, records=5)
    m.heartbeat()
    m.fetch(tid)                                   # starts the share-partition at 5 (latest)
    c = m.client
    d = c.request("DescribeShareGroupOffsets", 0, {"groups": [{"group_id": "g",
                                                               "topics": None}]})
    g = d["groups"][0]
    assert g["error_code"] == 0
    assert [(t["topic_name"], [(p["partition_index"], p["start_offset"])
                               for p in t["partitions"]]) for t in g["topics"]] == \
        [("t", [(0, 5)])]
    alter = {"group_id": "g", "topics": [{"topic_name": "t", "partitions": [
        {"partition_index": 0, "start_offset": 1}]}]}
    assert c.request("AlterShareGroupOffsets", 0, alter)["error_code"] == 68   # has a member
    m.heartbeat(epoch=-1)
    r = c.request("AlterShareGroupOffsets", 0, alter)
    assert r["error_code"] == 0 and r["responses"][0]["partitions"][0]["error_code"] == 0
    bad = {"group_id": "g", "topics": [{"topic_name": "t", "partitions": [
        {"partition_index": 0, "start_offset": 99}]}]}
    assert c.request("AlterShareGroupOffsets", 0, bad)["responses"][0]["partitions"][0][
        "error_code"] == 42
    m2 = Member(broker, "g", ["t"])
    m2.heartbeat()
    assert acquired(m2.fetch(tid)) == [(1, 4, 1)]     # from the new start
    m2.heartbeat(epoch=-1)
    m2.fetch(tid, epoch=-1)
    r = c.request("DeleteShareGroupOffsets", 0, {"group_id": "g",
                                                 "topics": [{"topic_name": "t"}]})
    assert r["error_code"] == 0 and r["responses"][0]["error_code"] == 0
    d = c.request("DescribeShareGroupOffsets", 0, {"groups": [{"group_id": "g", "topics": [
        {"topic_name": "t", "partitions": [0]}]}]})
    assert d["groups"][0]["topics"][0]["partitions"][0]["start_offset"] == -1


def test_an_accept_is_answered_once_in_the_state_log_without_waiting_for_its_fsync(
        broker, monkeypatch):
    """Share state is written to __share_group_state before an acknowledgement is answered
    (so kill -9 never redelivers an answered ACCEPT), but its fsync is not waited for: a
    power loss redelivers, it loses no data (docs/share-groups.md, Durability). Produce
    acks=all still waits for its fsync."""
    from gregor.broker.partition import Partition
    from gregor.broker.share import state_records as S
    mark = Partition.mark_durable
    monkeypatch.setattr(Partition, "mark_durable", lambda p, offset: False
                        if p.topic == S.TOPIC else mark(p, offset))   # its fsync never ends
    m, tid = setup(broker, records=0)
    m.heartbeat()
    m.fetch(tid)
    produce(m.client, "t", [b"a", b"b", b"c"])
    assert acquired(m.fetch(tid)) == [(0, 2, 1)]
    r = m.fetch(tid, acks=[(0, 1, [ACCEPT])])
    assert r["error_code"] == 0 and part(r)["acknowledge_error_code"] == 0
    r = m.acknowledge(tid, [(2, 2, [ACCEPT])])
    assert r["error_code"] == 0 and r["responses"][0]["partitions"][0]["error_code"] == 0

    def state_log(b):
        target = S.partition_for("g", tid, 0, b.share.store.num_partitions)
        p = b.replica_manager.get(S.TOPIC, target)
        return p.high_watermark, p.durable_offset, [S.decode_value(v)["start_offset"]
                                                     for _k, v in b.share.store.records(target)]
    hw, durable, starts = broker.run_on_loop(state_log)
    assert hw == len(starts) and durable == 0 and starts[-1] == 3    # in the log, not synced
