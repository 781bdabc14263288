"""What the controller tells the brokers (propagation.py) and how a broker's metadata cache
takes UpdateMetadata (metadata_cache.py): sans-I/O, against Kafka's ZooKeeper-mode rules."""
from __future__ import annotations

import copy

from gregor.broker.cluster import znodes as z
from gregor.broker.cluster.metadata_cache import apply_update_metadata
from gregor.broker.cluster.metadata_store import ClusterSnapshot
from gregor.broker.cluster.propagation import FULL, INCREMENTAL, PushPlanner
from gregor.protocol import messages
from gregor.protocol.header import decode_request, encode_request

TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def cluster(brokers=(0, 1, 2)) -> ClusterSnapshot:
    snap = ClusterSnapshot(controller_id=0, controller_epoch=3)
    for b in brokers:
        snap.brokers[b] = z.BrokerInfo(b, "127.0.0.1", 9092 + b, "r1", 0,
                                       (f"PLAINTEXT://127.0.0.1:{9092 + b}",
                                        f"REPLICATION://10.0.0.{b}:{9192 + b}"))
        snap.broker_epochs[b] = 1000 + b
    view = z.TopicView("t", z.TopicAssignment({0: [0, 1], 1: [1, 2], 2: [2, 0]}, TOPIC_ID))
    view.states = {0: z.PartitionState(0, 0, [0, 1], 3, 0),
                   1: z.PartitionState(1, 0, [1, 2], 3, 0),
                   2: z.PartitionState(2, 0, [2, 0], 3, 0)}
    snap.topics["t"] = view
    return snap


def by_broker(pushes):
    out = {}
    for p in pushes:
        out.setdefault(p.broker_id, []).append(p)
    return out


def partitions(push):
    return sorted((t["topic_name"], ps["partition_index"]) for t in push.body["topic_states"]
                  for ps in t["partition_states"])


def test_a_new_controller_tells_every_broker_everything_leader_and_isr_first():
    snap = cluster()
    pushes = by_broker(PushPlanner(0, 3).plan(snap))
    assert sorted(pushes) == [0, 1, 2]
    for b, mine in {0: [0, 2], 1: [0, 1], 2: [1, 2]}.items():
        lai, um = pushes[b]
        assert (lai.api, um.api) == ("LeaderAndIsr", "UpdateMetadata")
        assert lai.body["type"] == FULL and lai.broker_epoch == 1000 + b
        assert lai.body["controller_epoch"] == 3 and lai.body["broker_epoch"] == 1000 + b
        assert partitions(lai) == [("t", p) for p in mine]      # only its own replicas
        assert partitions(um) == [("t", 0), ("t", 1), ("t", 2)]     # the whole cluster
        assert [b["id"] for b in um.body["live_brokers"]] == [0, 1, 2]
        assert {e["listener"] for e in um.body["live_brokers"][0]["endpoints"]} == \
            {"PLAINTEXT", "REPLICATION"}
        leaders = {ll["broker_id"] for ll in lai.body["live_leaders"]}
        assert leaders == {s.leader for p, s in snap.topics["t"].states.items() if p in mine}


def test_nothing_changed_means_nothing_sent():
    planner = PushPlanner(0, 3)
    snap = cluster()
    planner.plan(snap)
    assert planner.plan(copy.deepcopy(snap)) == []


def test_a_new_leader_goes_to_the_replicas_and_the_state_to_everyone():
    planner = PushPlanner(0, 3)
    snap = cluster()
    planner.plan(snap)
    snap.topics["t"].states[1] = z.PartitionState(2, 1, [2], 3, 1)
    pushes = by_broker(planner.plan(snap))
    for b in (1, 2):                            # the replicas of partition 1
        lai, um = pushes[b]
        assert lai.api == "LeaderAndIsr" and lai.body["type"] == INCREMENTAL
        assert partitions(lai) == [("t", 1)]
        state = lai.body["topic_states"][0]["partition_states"][0]
        assert (state["leader"], state["leader_epoch"], state["isr"],
                state["partition_epoch"]) == (2, 1, [2], 1)
        assert partitions(um) == [("t", 1)]
    assert [p.api for p in pushes[0]] == ["UpdateMetadata"]


def test_an_isr_change_by_the_leader_is_only_update_metadata():
    planner = PushPlanner(0, 3)
    snap = cluster()
    planner.plan(snap)
    snap.topics["t"].states[0] = z.PartitionState(0, 0, [0], 3, 1)   # same leader epoch
    pushes = planner.plan(snap)
    assert {p.api for p in pushes} == {"UpdateMetadata"} and len(pushes) == 3
    assert all(partitions(p) == [("t", 0)] for p in pushes)


def test_a_dead_broker_is_dropped_and_listed_offline_in_one_update():
    planner = PushPlanner(0, 3)
    snap = cluster()
    planner.plan(snap)
    del snap.brokers[2], snap.broker_epochs[2]
    # the controller's election, written in the same round
    snap.topics["t"].states[1] = z.PartitionState(1, 1, [1], 3, 1)
    snap.topics["t"].states[2] = z.PartitionState(0, 1, [0], 3, 1)
    pushes = by_broker(planner.plan(snap))
    assert sorted(pushes) == [0, 1]
    um = pushes[0][-1]
    assert um.api == "UpdateMetadata" and [b["id"] for b in um.body["live_brokers"]] == [0, 1]
    offline = {ps["partition_index"]: ps["offline_replicas"]
               for t in um.body["topic_states"] for ps in t["partition_states"]}
    assert offline == {1: [2], 2: [2]}
    assert partitions(pushes[0][0]) == [("t", 2)] and partitions(pushes[1][0]) == [("t", 1)]


def test_a_broker_back_under_a_new_session_is_told_everything_again():
    planner = PushPlanner(0, 3)
    snap = cluster()
    planner.plan(snap)
    snap.broker_epochs[1] = 2000                 # re-registered: a new czxid
    pushes = by_broker(planner.plan(snap))
    lai, um = pushes[1]
    assert lai.body["type"] == FULL and partitions(lai) == [("t", 0), ("t", 1)]
    assert lai.body["broker_epoch"] == 2000 and partitions(um) == [("t", 0), ("t", 1), ("t", 2)]
    # the others only learn the (unchanged) broker list again
    assert [p.api for p in pushes[0]] == ["UpdateMetadata"] and partitions(pushes[0][0]) == []


def test_a_deleted_topic_is_stopped_on_its_replicas_and_removed_from_caches():
    planner = PushPlanner(0, 3)
    snap = cluster()
    planner.plan(snap)
    snap.topics["t"].deleting = True
    pushes = by_broker(planner.plan(snap))
    for b, mine in {0: [0, 2], 1: [0, 1], 2: [1, 2]}.items():
        um, stop = pushes[b]
        assert stop.api == "StopReplica" and partitions(stop) == [("t", p) for p in mine]
        assert all(ps["delete_partition"] for t in stop.body["topic_states"]
                   for ps in t["partition_states"])
        assert {ps["leader"] for t in um.body["topic_states"]
                for ps in t["partition_states"]} == {-2}
    snap.topics.clear()
    assert planner.plan(snap) == []            # told once


def test_every_push_survives_the_wire():
    planner = PushPlanner(0, 3)
    snap = cluster()
    pushes = planner.plan(snap)
    snap.topics["t"].deleting = True
    pushes += planner.plan(snap)
    for push in pushes:
        api = messages.api(push.api)
        raw = encode_request(api, push.version, 1, "gregor-controller-0", push.body)
        header, body = decode_request(api, raw[4:])
        assert header.api_version == push.version
        assert body["controller_epoch"] == 3 and body["broker_epoch"] == push.broker_epoch
        assert partitions(push) == sorted(
            (t["topic_name"], ps["partition_index"]) for t in body["topic_states"]
            for ps in t["partition_states"])


def test_update_metadata_fills_the_cache_and_leader_minus_2_removes():
    planner = PushPlanner(0, 3)
    snap = cluster()
    um = [p for p in planner.plan(snap) if p.broker_id == 1 and p.api == "UpdateMetadata"][0]
    cache = ClusterSnapshot()
    apply_update_metadata(cache, um.body, {"t": {"cleanup.policy": "compact"}})
    assert cache.controller_id == 0 and cache.controller_epoch == 3
    assert sorted(cache.brokers) == [0, 1, 2]
    assert cache.brokers[2].endpoint("REPLICATION") == ("10.0.0.2", 9194)
    assert cache.brokers[2].endpoint("PLAINTEXT") == ("127.0.0.1", 9094)
    view = cache.topics["t"]
    assert view.assignment.topic_id == TOPIC_ID and view.configs == {"cleanup.policy": "compact"}
    assert view.assignment.partitions == snap.topics["t"].assignment.partitions
    assert {p: (s.leader, s.leader_epoch, s.isr, s.zk_version) for p, s in view.states.items()} \
        == {p: (s.leader, s.leader_epoch, s.isr, s.zk_version)
            for p, s in snap.topics["t"].states.items()}
    snap.topics["t"].deleting = True
    um = [p for p in planner.plan(snap) if p.broker_id == 1 and p.api == "UpdateMetadata"][0]
    apply_update_metadata(cache, um.body, {})
    assert "t" not in cache.topics


def test_a_topic_created_again_replaces_the_cached_one():
    cache = ClusterSnapshot()
    first = PushPlanner(0, 3).plan(cluster())[1].body
    apply_update_metadata(cache, first, {})
    again = cluster()
    again.topics["t"].assignment = z.TopicAssignment({0: [1]}, "AAAAAAAAAAAAAAAAAAAAAg")
    again.topics["t"].states = {0: z.PartitionState(1, 0, [1], 3, 0)}
    body = PushPlanner(0, 4).plan(again)[1].body
    apply_update_metadata(cache, body, {})
    assert cache.topics["t"].assignment.partitions == {0: [1]}
    assert z.topic_id_text(bytes(16)) is None
    assert z.topic_id_text(z.topic_id_bytes(TOPIC_ID)) == TOPIC_ID


def test_live_brokers_carry_each_listeners_security_protocol():
    from gregor.broker.cluster.propagation import _live_broker, broker_info
    info = z.BrokerInfo(4, "h", 9093, "r1", 0, ("SASL_SSL://h:9093", "OPEN://h:9095"),
                        (("SASL_SSL", "SASL_SSL"), ("OPEN", "PLAINTEXT")))
    entry = _live_broker(info)
    assert [(e["listener"], e["security_protocol"]) for e in entry["endpoints"]] == \
        [("SASL_SSL", 3), ("OPEN", 0)]
    back = broker_info(entry)
    assert back.protocol("SASL_SSL") == "SASL_SSL" and back.endpoint("OPEN") == ("h", 9095)
