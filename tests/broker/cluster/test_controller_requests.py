"""The controller's requests as a broker takes them (three broker processes on ZooKeeper):
LeaderAndIsr and UpdateMetadata from an older controller epoch, or meant for an earlier
registration of the broker, are refused and change nothing; a partition state with an older
leader epoch is fenced, one that is not newer is ignored. The requests are sent here by hand,
as a stale controller would send them."""
from __future__ import annotations


import pytest

from gregor.protocol.errors import ErrorCode
from tests.support.wire import WireClient

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def cluster(three_brokers):
    return three_brokers


def metadata(port: int, topic: str) -> dict:
    with WireClient(port) as w:
        return w.request("Metadata", 12, {"topics": [{"topic_id": bytes(16), "name": topic}],
                                          "allow_auto_topic_creation": False,
                                          "include_topic_authorized_operations": False})


def leaders(port: int, topic: str) -> dict:
    md = metadata(port, topic)
    return {p["partition_index"]: (p["leader_id"], p["leader_epoch"], p["isr_nodes"])
            for t in md["topics"] for p in t["partitions"]}


@pytest.fixture(scope="module")
def topic(cluster):
    from confluent_kafka.admin import AdminClient, NewTopic
    name = "fenced"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(name, 3, 3)], operation_timeout=20)[name].result(60)
    cluster.wait_for(lambda: all(
        len(leaders(b.port, name)) == 3 and all(v[0] >= 0 and len(v[2]) == 3
                                                for v in leaders(b.port, name).values())
        for b in cluster.brokers), what="the topic on every broker with a full ISR")
    return name


def leader_and_isr(ctrl: int, controller_epoch: int, broker_epoch: int, topic: str,
                   topic_id: bytes, partition: int, leader: int, leader_epoch: int,
                   partition_epoch: int) -> dict:
    return {"controller_id": ctrl, "is_kraft_controller": False,
            "controller_epoch": controller_epoch, "broker_epoch": broker_epoch, "type": 0,
            "topic_states": [{"topic_name": topic, "topic_id": topic_id, "partition_states": [{
                "partition_index": partition, "controller_epoch": controller_epoch,
                "leader": leader, "leader_epoch": leader_epoch, "isr": [leader],
                "partition_epoch": partition_epoch, "replicas": [0, 1, 2],
                "adding_replicas": [], "removing_replicas": [], "is_new": False,
                "leader_recovery_state": 0}]}],
            "live_leaders": []}


def test_requests_from_a_stale_controller_or_for_an_old_registration_change_nothing(
        cluster, topic):
    c = cluster
    ctrl, epoch = c.controller_id(), c.controller_epoch()
    target = next(b for b in c.brokers if b.broker_id != ctrl)
    czxid = c.zk.get(f"/brokers/ids/{target.broker_id}")[1].czxid
    before = leaders(target.port, topic)
    topic_id = metadata(target.port, topic)["topics"][0]["topic_id"]
    # make the target the leader of partition 0 at a much higher leader epoch: accepted,
    # this would take leadership away from the real leader
    grab = dict(ctrl=ctrl, topic=topic, topic_id=topic_id, partition=0,
                leader=target.broker_id, leader_epoch=before[0][1] + 50, partition_epoch=99)
    with WireClient(target.port) as w:
        r = w.request("LeaderAndIsr", 7, leader_and_isr(
            controller_epoch=epoch - 1, broker_epoch=czxid, **grab))
        assert r["error_code"] == ErrorCode.STALE_CONTROLLER_EPOCH
        r = w.request("LeaderAndIsr", 7, leader_and_isr(
            controller_epoch=epoch, broker_epoch=czxid - 1, **grab))
        assert r["error_code"] == ErrorCode.STALE_BROKER_EPOCH
        r = w.request("UpdateMetadata", 8, {
            "controller_id": ctrl, "is_kraft_controller": False, "type": 0,
            "controller_epoch": epoch - 1, "broker_epoch": czxid, "topic_states": [],
            "live_brokers": []})
        assert r["error_code"] == ErrorCode.STALE_CONTROLLER_EPOCH
        # a made-up epoch, or another broker at the current one: not what ZooKeeper names
        r = w.request("LeaderAndIsr", 7, leader_and_isr(
            controller_epoch=epoch + 100, broker_epoch=czxid, **grab))
        assert r["error_code"] == ErrorCode.STALE_CONTROLLER_EPOCH
        grab["ctrl"] = target.broker_id
        r = w.request("LeaderAndIsr", 7, leader_and_isr(
            controller_epoch=epoch, broker_epoch=czxid, **grab))
        assert r["error_code"] == ErrorCode.STALE_CONTROLLER_EPOCH
    assert leaders(target.port, topic) == before
    md = metadata(target.port, topic)
    assert len(md["brokers"]) == 3 and md["controller_id"] == ctrl
    # the partition still serves from its real leader, and the real controller is still
    # heard: a topic created now reaches the target's Metadata
    real = c.by_id(before[0][0])
    assert leaders(real.port, topic)[0] == before[0]
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic("after-forgery", 1, 3)], operation_timeout=20)[
        "after-forgery"].result(60)
    assert leaders(target.port, "after-forgery")[0][0] >= 0


def test_older_leader_epochs_are_fenced_and_equal_ones_ignored(cluster, topic):
    c = cluster
    ctrl, epoch = c.controller_id(), c.controller_epoch()
    target = next(b for b in c.brokers if b.broker_id != ctrl)
    before = leaders(target.port, topic)
    topic_id = metadata(target.port, topic)["topics"][0]["topic_id"]
    leader, leader_epoch, _ = before[1]
    state = c.zk.get(f"/brokers/topics/{topic}/partitions/1/state")
    zk_version = state[1].version
    with WireClient(target.port) as w:
        older = w.request("LeaderAndIsr", 7, leader_and_isr(
            ctrl, epoch, -1, topic, topic_id, 1, target.broker_id, leader_epoch - 1, zk_version))
        same = w.request("LeaderAndIsr", 7, leader_and_isr(
            ctrl, epoch, -1, topic, topic_id, 1, target.broker_id, leader_epoch, zk_version))
    code = lambda r: r["topics"][0]["partition_errors"][0]["error_code"]  # noqa: E731
    with WireClient(target.port) as w:
        outside = w.request("LeaderAndIsr", 7, leader_and_isr(
            ctrl, epoch, -1, "../escape", topic_id, 0, target.broker_id, 0, 0))
        negative = w.request("LeaderAndIsr", 7, leader_and_isr(
            ctrl, epoch, -1, topic, topic_id, -1, target.broker_id, 99, 99))
    assert code(outside) == code(negative) == ErrorCode.INVALID_REQUEST
    assert not (target.data_dir.parent / "escape-0").exists()
    assert older["error_code"] == 0 and code(older) == ErrorCode.FENCED_LEADER_EPOCH
    assert same["error_code"] == 0 and code(same) == ErrorCode.STALE_CONTROLLER_EPOCH
    assert leaders(target.port, topic) == before
    # and the partition is where ZooKeeper says it is
    import json
    assert json.loads(state[0])["leader"] == leader


def test_a_broker_outside_a_cluster_has_no_controller(tmp_path):
    from tests.support.broker import BrokerProcess
    with BrokerProcess(tmp_path / "single") as b, WireClient(b.port) as w:
        r = w.request("LeaderAndIsr", 7, leader_and_isr(0, 1, -1, "t", bytes(16), 0, 0, 1, 0))
        assert r["error_code"] == ErrorCode.STALE_CONTROLLER_EPOCH
        r = w.request("StopReplica", 4, {"controller_id": 0, "is_kraft_controller": False,
                                         "controller_epoch": 1, "broker_epoch": -1,
                                         "topic_states": []})
        assert r["error_code"] == ErrorCode.STALE_CONTROLLER_EPOCH


def alter(broker_id: int, broker_epoch: int, topic: str, partition: int, leader_epoch: int,
          isr: list[int], partition_epoch: int) -> dict:
    return {"broker_id": broker_id, "broker_epoch": broker_epoch, "topics": [{
        "topic_name": topic, "partitions": [{
            "partition_index": partition, "leader_epoch": leader_epoch, "new_isr": isr,
            "leader_recovery_state": 0, "partition_epoch": partition_epoch}]}]}


def state_of(c, topic: str, partition: int):
    import json
    data, stat = c.zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
    return json.loads(data), stat.version


def test_alter_partition_is_checked_by_the_controller(cluster, topic):
    c = cluster
    ctrl = c.controller_id()
    doc, version = state_of(c, topic, 2)
    leader, epoch, isr = doc["leader"], doc["leader_epoch"], doc["isr"]
    other = next(b for b in (0, 1, 2) if b != leader)
    czxid = c.zk.get(f"/brokers/ids/{leader}")[1].czxid

    def ask(port, body):
        with WireClient(port) as w:
            r = w.request("AlterPartition", 1, body)
        if r["error_code"]:
            return r["error_code"], None
        pd = r["topics"][0]["partitions"][0]
        return pd["error_code"], pd
    ctrl_port = c.by_id(ctrl).port
    shrunk = [leader]
    assert ask(ctrl_port, alter(leader, czxid, topic, 2, epoch - 1, shrunk, version))[0] == \
        ErrorCode.FENCED_LEADER_EPOCH
    assert ask(ctrl_port, alter(leader, czxid, topic, 2, epoch, shrunk, version + 5))[0] == \
        ErrorCode.INVALID_UPDATE_VERSION
    assert ask(ctrl_port, alter(other, -1, topic, 2, epoch, shrunk, version))[0] == \
        ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert ask(ctrl_port, alter(leader, czxid, topic, 2, epoch, isr + [7], version))[0] == \
        ErrorCode.INELIGIBLE_REPLICA
    assert ask(ctrl_port, alter(leader, czxid, topic, 2, epoch, [other], version))[0] == \
        ErrorCode.INELIGIBLE_REPLICA                      # the leader must stay in it
    assert ask(ctrl_port, alter(leader, czxid - 1, topic, 2, epoch, shrunk, version))[0] == \
        ErrorCode.STALE_BROKER_EPOCH
    non_ctrl = next(b for b in c.brokers if b.broker_id != ctrl)
    assert ask(non_ctrl.port, alter(leader, czxid, topic, 2, epoch, shrunk, version))[0] == \
        ErrorCode.NOT_CONTROLLER
    code, pd = ask(ctrl_port, alter(leader, czxid, topic, 2, epoch, isr, version))
    assert code == ErrorCode.NONE                          # already so: the current state
    assert (pd["leader_id"], pd["leader_epoch"], pd["isr"], pd["partition_epoch"]) == \
        (leader, epoch, isr, version)
    assert state_of(c, topic, 2) == (doc, version)          # nothing written


def test_a_controlled_shutdown_of_an_earlier_registration_is_refused(cluster, topic):
    """ControlledShutdown v2+ carries the broker epoch (KIP-380): one sent by an earlier
    registration of the broker (before it lost its session) is STALE_BROKER_EPOCH at the
    controller and moves nothing."""
    c = cluster
    ctrl = c.controller_id()
    victim = next(b for b in (0, 1, 2) if b != ctrl)
    czxid = c.zk.get(f"/brokers/ids/{victim}")[1].czxid
    before = [state_of(c, topic, p) for p in range(3)]
    with WireClient(c.by_id(ctrl).port) as w:
        r = w.request("ControlledShutdown", 3, {"broker_id": victim, "broker_epoch": czxid - 1})
    assert r["error_code"] == ErrorCode.STALE_BROKER_EPOCH
    assert [state_of(c, topic, p) for p in range(3)] == before


def test_an_isr_change_at_the_controller_reaches_every_broker_and_the_leader_repairs_it(
        cluster, topic):
    """A change the leader did not make itself (here sent by hand on its behalf, as if its
    answer had been lost): the controller writes it and tells every broker; the leader adopts
    the newer partition epoch from UpdateMetadata, sees its follower caught up and asks the
    controller to add it back."""
    c = cluster
    doc, version = state_of(c, topic, 0)
    leader, epoch, isr = doc["leader"], doc["leader_epoch"], doc["isr"]
    assert len(isr) == 3
    dropped = next(b for b in isr if b != leader)
    czxid = c.zk.get(f"/brokers/ids/{leader}")[1].czxid
    with WireClient(c.by_id(c.controller_id()).port) as w:
        r = w.request("AlterPartition", 1, alter(leader, czxid, topic, 0, epoch,
                                                 [b for b in isr if b != dropped], version))
    pd = r["topics"][0]["partitions"][0]
    assert r["error_code"] == 0 and pd["error_code"] == 0
    assert pd["partition_epoch"] == version + 1 and dropped not in pd["isr"]
    # the leader's next fetch from the dropped follower puts it back, through the controller
    c.wait_for(lambda: (lambda d, v: v >= version + 2 and sorted(d["isr"]) == sorted(isr))(
        *state_of(c, topic, 0)), what="the follower back in the ISR")
    final, final_version = state_of(c, topic, 0)
    assert final["leader_epoch"] == epoch and final["leader"] == leader
    for b in c.brokers:
        c.wait_for(lambda b=b: sorted(leaders(b.port, topic)[0][2]) == sorted(isr),
                   what=f"broker {b.broker_id}'s Metadata showing the ISR")
