"""A secured three-broker cluster, as `gregor cluster --secure` runs one (SASL_SSL everywhere,
SCRAM-SHA-512 between brokers, ACLs, ZooKeeper ACLs), under real clients and faults: it
replicates acks=all with confluent-kafka over SASL_SSL, a kill -9 of a leader loses nothing
acknowledged, credentials are the same on every broker after a controller failover and a
change reaches every broker, and nobody without the brokers' ZooKeeper login can change
the cluster's znodes.

One cluster for the module (tests leave every broker running when they end)."""
from __future__ import annotations

import threading
import time

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from gregor.testing.checkers import ReplicationChecker
from tests.broker.cluster import test_replication as replication
from tests.broker.cluster.test_replication import CheckedProducer
from tests.support.secure_cluster import SecureCluster

pytestmark = pytest.mark.timeout(300)
TOPIC = "events"


@pytest.fixture(scope="module")
def cluster(zookeeper_server, tmp_path_factory):
    # SASL sessions of 3 s (KIP-368): the brokers' long-lived connections to each other (and
    # librdkafka's) log in again on the same socket every few seconds throughout the tests
    c = SecureCluster(tmp_path_factory.mktemp("secure-cluster"), zookeeper_server.hosts,
                      plaintext_listener=True,
                      settings={"connections.max.reauth.ms": 3000}).start()
    try:
        new_topic(c, TOPIC)
        yield c
    finally:
        c.stop()


def new_topic(c, name: str, partitions: int = 3) -> str:
    """RF 3, min.insync.replicas 2, created by the admin user; returns once every ISR is full."""
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient(c.client_config())
    admin.create_topics([NewTopic(name, partitions, 3, config={"min.insync.replicas": "2"})]
                        )[name].result(60)
    c.wait_for(lambda: all(full_isr(c, p, name) for p in range(partitions)),
               what=f"full ISRs of {name}")
    return name


def state(c, topic: str, p: int) -> dict:
    try:
        return c.json(f"/brokers/topics/{topic}/partitions/{p}/state") or {"isr": [], "leader": -1}
    except Exception:
        return {"isr": [], "leader": -1}


def full_isr(c, p: int, topic: str = TOPIC) -> bool:
    return len(state(c, topic, p)["isr"]) == len(c.brokers)


class Load(CheckedProducer):
    """The replication tests' checked producer (idempotent, acks=all, every acknowledgement
    to the checker) logged in over SASL_SSL, sending from a thread."""

    def __init__(self, c, topic: str, checker: ReplicationChecker):
        super().__init__(c.bootstrap, topic, checker, config=c.client_config())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.send(50)
            time.sleep(0.005)

    def start(self) -> "Load":
        self._thread.start()
        return self

    def finish(self, timeout: float = 90) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(30)
        self.flush(timeout)
        assert not self.errors, self.errors[:3]


def consume_all(c, topic: str, partitions: int, checker: ReplicationChecker) -> dict:
    return replication.consume_all(c.bootstrap, topic, partitions, checker,
                                   config=c.client_config())


def add_user(c, user: str, password: str, via=None) -> None:
    """AlterUserScramCredentials through one broker (confluent-kafka's admin client)."""
    from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialUpsertion)
    cfg = c.client_config()
    if via is not None:
        cfg["bootstrap.servers"] = c.address(via)
    admin = AdminClient(cfg)
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
    for f in admin.alter_user_scram_credentials(
            [UserScramCredentialUpsertion(user, info, password.encode())]).values():
        f.result(30)


def test_acks_all_replicates_over_sasl_ssl(cluster):
    c = cluster
    checker = ReplicationChecker()
    load = Load(c, TOPIC, checker)
    load.send(3000)
    load.finish()
    assert len(checker.acked) == 3000
    ends = consume_all(c, TOPIC, 3, checker)
    assert sum(ends.values()) >= 3000
    assert checker.problems() == [], checker.summary()
    c.wait_for(lambda: all(full_isr(c, p) for p in range(3)), what="full ISRs")
    # the brokers reached each other only over SASL_SSL (the INSECURE listener is not the
    # inter-broker one) and never failed to log in to one another
    for b in c.brokers:
        assert "refused this broker's SASL" not in b.output()
        assert "TLS handshake with broker" not in b.output()


def test_a_leader_killed_under_load_loses_nothing_acknowledged(cluster):
    c = cluster
    topic = new_topic(c, "killed-leader", 1)
    checker = ReplicationChecker()
    load = Load(c, topic, checker).start()
    c.wait_for(lambda: len(checker.acked) >= 1500, what="1500 acknowledged records")
    old = state(c, topic, 0)["leader"]
    c.by_id(old).kill()
    c.wait_for(lambda: state(c, topic, 0)["leader"] not in (old, -1), what="a new leader")
    at_failover = len(checker.acked)
    c.wait_for(lambda: len(checker.acked) >= at_failover + 1500, timeout=60,
               what="1500 more acknowledged records without the old leader")
    c.by_id(old).start()       # back as a follower over SASL_SSL: truncates, catches up
    c.wait_for(lambda: full_isr(c, 0, topic) and all(full_isr(c, p) for p in range(3)),
               what="the restarted broker back in every ISR")
    load.finish()
    consume_all(c, topic, 1, checker)
    assert checker.problems() == [], checker.summary()


def acl(user: str, topic: str, operation: str = "READ"):
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType,
                                       ResourcePatternType, ResourceType)
    return AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, f"User:{user}",
                      "*", getattr(AclOperation, operation), AclPermissionType.ALLOW)


def admin_via(c, via=None):
    """An admin client logged in as the admin, bootstrapped from broker `via` alone if given."""
    from confluent_kafka.admin import AdminClient
    cfg = c.client_config()
    if via is not None:
        cfg["bootstrap.servers"] = c.address(via)
    return AdminClient(cfg)


def create_acls(c, bindings, via=None) -> None:
    admin = admin_via(c, via)        # held until the results are in: its handle serves them
    for f in admin.create_acls(bindings).values():
        f.result(30)


def delete_acls(c, bindings, via=None) -> None:
    from confluent_kafka.admin import AclBindingFilter
    filters = [AclBindingFilter(b.restype, b.name, b.resource_pattern_type, b.principal,
                                b.host, b.operation, b.permission_type) for b in bindings]
    admin = admin_via(c, via)
    for f in admin.delete_acls(filters).values():
        f.result(30)


def sees(c, b, user: str, password: str, topic: str) -> bool:
    """Whether broker b lets user see topic in Metadata (DESCRIBE, implied by READ): the
    broker's own authorizer decides, from the ACLs it holds."""
    conn = c.login(b, user, password)
    assert conn is not None, f"{user} cannot log in to broker {b.broker_id}"
    try:
        body = conn.request("Metadata", 1, {"topics": [{"name": topic}]})
    finally:
        conn.close()
    code = body["topics"][0]["error_code"]
    assert code in (0, 29), body
    return code == 0


def test_credentials_and_acls_are_the_same_on_every_broker_after_a_controller_failover(
        cluster):
    """A user and an ACL created through one broker reach every broker (each follows
    /config/changes and /kafka-acl-changes); after kill -9 of the controller a new one is
    elected, a user and an ACL created meanwhile reach the survivors, and the old controller,
    restarted, holds both; what is removed is removed everywhere."""
    c = cluster
    add_user(c, "carol", "carol-secret", via=c.brokers[0])
    create_acls(c, [acl("carol", TOPIC)], via=c.brokers[0])
    c.wait_for(lambda: all(c.can_login(b, "carol", "carol-secret") for b in c.brokers),
               what="carol's credential on every broker")
    c.wait_for(lambda: all(sees(c, b, "carol", "carol-secret", TOPIC) for b in c.brokers),
               what="carol's ACL on every broker")
    assert not any(c.can_login(b, "carol", "wrong") for b in c.brokers)
    ctrl = c.controller_id()
    c.by_id(ctrl).kill()
    c.wait_for(lambda: c.controller_id() not in (-1, ctrl), what="a new controller")
    survivors = [b for b in c.brokers if b.broker_id != ctrl]
    add_user(c, "dave", "dave-secret", via=survivors[0])
    create_acls(c, [acl("dave", TOPIC)], via=survivors[1])
    c.wait_for(lambda: all(c.can_login(b, "dave", "dave-secret") and
                           sees(c, b, "dave", "dave-secret", TOPIC) for b in survivors),
               what="dave's credential and ACL on the survivors")
    c.by_id(ctrl).start()
    c.wait_for(lambda: all(full_isr(c, p) for p in range(3)), what="full ISRs again")
    for b in c.brokers:          # read at start: no waiting for the restarted one
        for user in ("carol", "dave"):
            assert c.can_login(b, user, f"{user}-secret"), (b.broker_id, user)
            assert sees(c, b, user, f"{user}-secret", TOPIC), (b.broker_id, user)
    from confluent_kafka.admin import (AdminClient, ScramMechanism,
                                       UserScramCredentialDeletion)
    delete_acls(c, [acl("carol", TOPIC)])
    admin = AdminClient(c.client_config())
    for f in admin.alter_user_scram_credentials(
            [UserScramCredentialDeletion("dave", ScramMechanism.SCRAM_SHA_512)]).values():
        f.result(30)
    c.wait_for(lambda: not any(c.can_login(b, "dave", "dave-secret") for b in c.brokers),
               what="dave refused by every broker")
    c.wait_for(lambda: not any(sees(c, b, "carol", "carol-secret", TOPIC) for b in c.brokers),
               what="carol's ACL gone from every broker")


def test_a_broker_restarted_applies_the_acls_changed_while_it_was_down(cluster):
    """ACLs added and removed while a broker is down (kill -9) hold on it as soon as it is
    back: it reads them all at start, before it serves."""
    c = cluster
    add_user(c, "erin", "erin-secret")
    add_user(c, "frank", "frank-secret")
    create_acls(c, [acl("frank", TOPIC)])
    c.wait_for(lambda: all(sees(c, b, "frank", "frank-secret", TOPIC) for b in c.brokers),
               what="frank's ACL on every broker")
    down = c.by_id(c.controller_id())
    down.kill()
    c.wait_for(lambda: c.controller_id() not in (-1, down.broker_id), what="a new controller")
    up = c.by_id(c.controller_id())
    create_acls(c, [acl("erin", TOPIC, "DESCRIBE")], via=up)
    delete_acls(c, [acl("frank", TOPIC)], via=up)
    down.start()
    assert sees(c, down, "erin", "erin-secret", TOPIC)
    assert not sees(c, down, "frank", "frank-secret", TOPIC)
    c.wait_for(lambda: all(full_isr(c, p) for p in range(3)), what="full ISRs again")


def test_without_the_brokers_zookeeper_login_nothing_can_be_changed(cluster):
    c = cluster
    hosts, _, chroot = c.connect.partition("/")
    anon = KazooClient(hosts=f"{hosts}/{chroot}")
    anon.start(10)
    try:
        state_path = f"/brokers/topics/{TOPIC}/partitions/0/state"
        before = anon.get(state_path)[0]
        for attempt in (lambda: anon.set(state_path, b'{"leader":-1}'),
                        lambda: anon.delete("/controller"),
                        lambda: anon.set("/controller_epoch", b"1000"),
                        lambda: anon.delete(f"/brokers/ids/{c.brokers[0].broker_id}"),
                        lambda: anon.create("/admin/delete_topics/" + TOPIC, b""),
                        lambda: anon.create("/config/changes/config_change_", b"{}",
                                            sequence=True),
                        lambda: anon.get("/config/users/admin"),
                        lambda: anon.create("/kafka-acl/Topic/evil", b'{"version":1}'),
                        lambda: anon.create("/kafka-acl-changes/acl_changes_", b"Topic:x",
                                            sequence=True),
                        lambda: anon.set(f"/config/topics/{TOPIC}", b'{"config":{}}')):
            with pytest.raises(NoAuthError):
                attempt()
        assert anon.get(state_path)[0] == before
    finally:
        anon.stop()
        anon.close()


# -- the inter-broker APIs are the brokers' alone (CLUSTER_ACTION) ------------------------------

def forged_requests(c, topic: str) -> list[tuple[object, str, int, dict]]:
    """(broker, api, version, body) of requests only a broker may send, each built with the
    right epochs (read from ZooKeeper, which anyone may read), so only authorization stops
    them: leadership moved to a follower or taken from the leader, the replica deleted, the
    follower's view of the cluster emptied, a follower's fetch claiming to have caught up
    (which would advance the high watermark), the ISR shrunk, the leader's leaderships handed
    away, an abort marker injected."""
    st = c.zk.get(f"/brokers/topics/{topic}/partitions/0/state")
    s, version = __import__("json").loads(st[0]), st[1].version
    ctrl, epoch = c.controller_id(), c.controller_epoch()
    leader = c.by_id(s["leader"])
    follower = next(b for b in c.brokers if b.broker_id != s["leader"])
    controller = c.by_id(ctrl)

    def broker_epoch(b):
        return c.zk.get(f"/brokers/ids/{b.broker_id}")[1].czxid

    def leader_and_isr(b, new_leader):
        return {"controller_id": ctrl, "is_kraft_controller": False, "controller_epoch": epoch,
                "broker_epoch": broker_epoch(b), "type": 0, "live_leaders": [],
                "topic_states": [{"topic_name": topic, "topic_id": bytes(16),
                                  "partition_states": [{
                                      "partition_index": 0, "controller_epoch": epoch,
                                      "leader": new_leader, "leader_epoch": s["leader_epoch"] + 50,
                                      "isr": [new_leader], "partition_epoch": version + 50,
                                      "replicas": [b.broker_id for b in c.brokers],
                                      "adding_replicas": [], "removing_replicas": [],
                                      "is_new": False, "leader_recovery_state": 0}]}]}
    return [
        (follower, "LeaderAndIsr", 7, leader_and_isr(follower, follower.broker_id)),
        (leader, "LeaderAndIsr", 7, leader_and_isr(leader, follower.broker_id)),
        (leader, "StopReplica", 3, {
            "controller_id": ctrl, "controller_epoch": epoch, "broker_epoch": broker_epoch(leader),
            "topic_states": [{"topic_name": topic, "partition_states": [
                {"partition_index": 0, "leader_epoch": -1, "delete_partition": True}]}]}),
        (follower, "UpdateMetadata", 8, {
            "controller_id": ctrl, "is_kraft_controller": False, "type": 0,
            "controller_epoch": epoch, "broker_epoch": broker_epoch(follower),
            "topic_states": [], "live_brokers": []}),
        (leader, "Fetch", 11, {
            "replica_id": follower.broker_id, "max_wait_ms": 0, "min_bytes": 0,
            "max_bytes": 1 << 20, "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [{
                "partition": 0, "current_leader_epoch": s["leader_epoch"],
                "fetch_offset": 10 ** 9, "log_start_offset": 0, "partition_max_bytes": 1 << 20,
                "last_fetched_epoch": -1}]}],
            "forgotten_topics_data": [], "rack_id": ""}),
        (controller, "AlterPartition", 1, {
            "broker_id": s["leader"], "broker_epoch": broker_epoch(leader), "topics": [{
                "topic_name": topic, "partitions": [{
                    "partition_index": 0, "leader_epoch": s["leader_epoch"],
                    "new_isr": [s["leader"]], "leader_recovery_state": 0,
                    "partition_epoch": version}]}]}),
        (controller, "ControlledShutdown", 3, {"broker_id": s["leader"],
                                               "broker_epoch": broker_epoch(leader)}),
        (leader, "WriteTxnMarkers", 1, {"markers": [{
            "producer_id": 1, "producer_epoch": 0, "transaction_result": False,
            "coordinator_epoch": 0, "topics": [{"name": topic, "partition_indexes": [0]}]}]}),
    ]


def error_codes(body) -> set[int]:
    """Every error code anywhere in an answer."""
    out = set()
    if isinstance(body, dict):
        for k, v in body.items():
            if k == "error_code":
                out.add(v)
            else:
                out |= error_codes(v)
    elif isinstance(body, list):
        for v in body:
            out |= error_codes(v)
    return out


def unchanged(c, topic: str, before: dict, records: int) -> None:
    """The partition is led as before on every broker's word, and its records are all there."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient
    assert {k: v for k, v in state(c, topic, 0).items() if k != "controller_epoch"} == before
    for b in c.brokers:
        md = AdminClient({**c.client_config(), "bootstrap.servers": c.address(b)}).list_topics(
            topic, timeout=20).topics[topic].partitions[0]
        assert (md.leader, sorted(md.isrs)) == (before["leader"], sorted(before["isr"]))
    consumer = Consumer(c.client_config(group_id="after-attack", enable_auto_commit=False))
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=20)
        assert (low, high) == (0, records)
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def attacked(cluster):
    """A partition with records, and mallory: a user who logs in but is no super user."""
    from confluent_kafka import Producer
    c = cluster
    topic = new_topic(c, "attacked", 1)
    p = Producer(c.client_config(acks="all"))
    for i in range(100):
        p.produce(topic, b"r%d" % i)
    assert p.flush(30) == 0
    add_user(c, "mallory", "mallory-secret")
    c.wait_for(lambda: all(c.can_login(b, "mallory", "mallory-secret") for b in c.brokers),
               what="mallory on every broker")
    before = {k: v for k, v in state(c, topic, 0).items() if k != "controller_epoch"}
    return topic, before, 100


def test_an_authenticated_user_who_is_no_broker_cannot_send_the_inter_broker_apis(
        cluster, attacked):
    """mallory logged in over SASL_SSL knows every epoch; each request is answered with
    CLUSTER_AUTHORIZATION_FAILED (a follower's fetch: TOPIC_AUTHORIZATION_FAILED, no
    records), and nothing changes."""
    c = cluster
    topic, before, records = attacked
    for b, api, version, body in forged_requests(c, topic):
        conn = c.login(b, "mallory", "mallory-secret")
        assert conn is not None
        try:
            answer = conn.request(api, version, body)
        finally:
            conn.close()
        codes = error_codes(answer) - {0}
        expected = 29 if api == "Fetch" else 31
        assert codes == {expected}, (api, answer)
        if api == "Fetch":
            assert not any(p["records"] for t in answer["responses"] for p in t["partitions"])
    unchanged(c, topic, before, records)


def test_unauthenticated_connections_cannot_send_the_inter_broker_apis(cluster, attacked):
    """On the SASL_SSL listener a connection that skips the login is closed at its first
    such request, unanswered; on a PLAINTEXT listener (User:ANONYMOUS) each is refused with
    the authorization error. Nothing changes either way."""
    c = cluster
    topic, before, records = attacked
    for b, api, version, body in forged_requests(c, topic):
        conn = c.wire(b)
        try:
            conn.send(api, version, body)
            assert conn.is_closed(), api
        finally:
            conn.close()
        with c.wire(b, "INSECURE") as conn:
            answer = conn.request(api, version, body)
        assert error_codes(answer) - {0} == {29 if api == "Fetch" else 31}, (api, answer)
    unchanged(c, topic, before, records)
    # the brokers themselves still replicate and answer acks=all
    from confluent_kafka import Producer
    p = Producer(c.client_config(acks="all"))
    p.produce(topic, b"after")
    assert p.flush(30) == 0
