"""Consumer groups with real clients against the broker: confluent-kafka (range and
cooperative-sticky), kafka-python, aiokafka, kcat -G, and a group mixing clients.

Each scenario checks what an application relies on: the members' assignments are disjoint and
cover every partition, every record is consumed exactly once while the group is stable, the
group rebalances when a member leaves or dies (kill -9: its session expires), and a restarted
group resumes exactly at the committed offsets.
"""
from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from confluent_kafka import TopicPartition

from tests.interop.targets import start_target

pytestmark = pytest.mark.interop

PARTITIONS = 4
SESSION_MS = 15000       # generous: a loaded CI machine must not expire a live member
KCAT = shutil.which("kcat") or shutil.which("kafkacat")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = start_target(tmp_path_factory.mktemp("groups") / "data",
                     settings={"group.initial.rebalance.delay.ms": "0",
                               "group.min.session.timeout.ms": "1000"})
    try:
        yield b
    finally:
        b.stop()


_seq = iter(range(10 ** 6))


def new_topic(broker, n_records: int, partitions: int = PARTITIONS) -> str:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    name = f"groups-{next(_seq)}-{int(time.time() * 1000) % 100000}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(n_records):
        p.produce(name, key=b"%d" % i, value=b"v%d" % i, partition=i % partitions)
    assert p.flush(30) == 0
    return name


def confluent(broker, group, **extra):
    from confluent_kafka import Consumer
    return Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 500, **extra})


def poll_until(consumers, want: int, timeout: float = 60.0, seen=None) -> dict:
    """Poll the consumers round robin until `want` records were seen in total; returns
    {(partition, offset): [member index, ...]} (a list, so duplicates show)."""
    seen = {} if seen is None else seen
    deadline = time.monotonic() + timeout
    while sum(len(v) for v in seen.values()) < want and time.monotonic() < deadline:
        for i, c in enumerate(consumers):
            m = c.poll(0.1)
            if m is not None and not m.error():
                seen.setdefault((m.partition(), m.offset()), []).append(i)
    return seen


def wait_assigned(consumers, partitions: int = PARTITIONS, timeout: float = 30.0, seen=None):
    """Poll until every member has partitions and together they cover each partition once
    (records polled on the way go into `seen`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for i, c in enumerate(consumers):
            m = c.poll(0.05)
            if m is not None and not m.error() and seen is not None:
                seen.setdefault((m.partition(), m.offset()), []).append(i)
        sets = [{tp.partition for tp in c.assignment()} for c in consumers]
        union = set().union(*sets)
        if union == set(range(partitions)) and sum(len(s) for s in sets) == partitions \
                and all(sets):
            return sets
    raise AssertionError(f"assignments never settled: {[c.assignment() for c in consumers]}")


def rewind(consumers, timeout: float = 120.0) -> None:
    """Seek every assigned partition of each consumer to offset 0. librdkafka refuses a seek
    (_STATE, "Erroneous state") on a partition assigned but not yet fetching, as right after
    a KIP-848 assignment: then poll and seek all of that consumer's partitions again, so
    nothing polled in between is lost from what the test counts afterwards."""
    from confluent_kafka import KafkaError, KafkaException, TopicPartition
    deadline = time.monotonic() + timeout
    for c in consumers:
        while True:
            try:
                for tp in c.assignment():
                    c.seek(TopicPartition(tp.topic, tp.partition, 0))
                break
            except KafkaException as e:
                if e.args[0].code() != KafkaError._STATE or time.monotonic() > deadline:
                    raise
                c.poll(0.05)


def exactly_once(seen: dict, n: int) -> None:
    dups = {k: v for k, v in seen.items() if len(v) > 1}
    assert not dups, f"records consumed more than once: {list(dups.items())[:5]}"
    per_partition = {}
    for p, o in seen:
        per_partition.setdefault(p, []).append(o)
    assert sum(len(v) for v in per_partition.values()) == n
    for p, offs in per_partition.items():
        assert sorted(offs) == list(range(len(offs))), f"partition {p} has gaps"


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "cooperative-sticky"])
def test_confluent_kafka_group_shares_partitions_and_rebalances_on_leave(broker, strategy):
    n = 400
    topic = new_topic(broker, n)
    group = f"cg-{strategy}-{topic}"
    c1 = confluent(broker, group, **{"partition.assignment.strategy": strategy})
    c2 = confluent(broker, group, **{"partition.assignment.strategy": strategy})
    try:
        c1.subscribe([topic])
        c2.subscribe([topic])
        sets = wait_assigned([c1, c2])
        assert all(sets), f"a member got nothing: {sets}"
        # What was read while the group formed is read again from each partition's start by
        # its final owner (nothing was committed): count from there, in the stable group.
        rewind([c1, c2])
        seen = poll_until([c1, c2], n)
        exactly_once(seen, n)
        c1.commit(asynchronous=False)
        c2.commit(asynchronous=False)
        c1.close()                              # leaves: c2 takes every partition
        c1 = None
        assert wait_assigned([c2]) == [set(range(PARTITIONS))]
        committed = c2.committed([tp for tp in c2.assignment()], timeout=10)
        assert sum(tp.offset for tp in committed) == n
    finally:
        for c in (c1, c2):
            if c is not None:
                c.close()


def test_restarted_group_resumes_at_committed_offsets(broker):
    topic = new_topic(broker, 200)
    group = f"resume-{topic}"
    c = confluent(broker, group)
    c.subscribe([topic])
    seen = poll_until([c], 120)
    # commit exactly what was consumed so far (the next offset of each partition)
    from confluent_kafka import TopicPartition
    nxt = {}
    for p, o in seen:
        nxt[p] = max(nxt.get(p, 0), o + 1)
    c.commit(offsets=[TopicPartition(topic, p, o) for p, o in nxt.items()], asynchronous=False)
    c.close()
    c = confluent(broker, group)
    c.subscribe([topic])
    rest = poll_until([c], 200 - sum(nxt.values()))
    c.close()
    for (p, o) in rest:
        assert o >= nxt.get(p, 0), f"re-read {p}:{o} below the committed {nxt.get(p)}"
    exactly_once({**seen, **rest}, 200)


def test_killed_member_is_expired_and_its_partitions_reassigned(broker, tmp_path):
    topic = new_topic(broker, 0)
    group = f"kill-{topic}"
    script = tmp_path / "member.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time
        from confluent_kafka import Consumer
        c = Consumer({{"bootstrap.servers": "{broker.bootstrap}", "group.id": "{group}",
                       "session.timeout.ms": 2000, "heartbeat.interval.ms": 300}})
        c.subscribe(["{topic}"])
        while True:
            c.poll(0.1)
            if c.assignment():
                print("assigned", flush=True)
    """))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE)
    lines: list = []
    threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True).start()
    c2 = confluent(broker, group)
    try:
        c2.subscribe([topic])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (
                lines and 0 < len(c2.assignment()) < PARTITIONS):
            c2.poll(0.1)
        # both members share the partitions now; kill one without a goodbye
        sets_before = {tp.partition for tp in c2.assignment()}
        assert 0 < len(sets_before) < PARTITIONS
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        killed_at = time.monotonic()
        assert wait_assigned([c2], timeout=30) == [set(range(PARTITIONS))]
        # not before its 2 s session ran out (the broker had no other way to know)
        assert time.monotonic() - killed_at >= 1.5
    finally:
        if proc.poll() is None:
            proc.kill()
        c2.close()


class _PollingMember(threading.Thread):
    """One group member polled from its own thread, as an application would: a member polled
    only between another client's blocking polls cannot answer a rebalance in time (librdkafka
    revokes in the application's poll; kafka-python abandons a join its poll() gave up on).
    Records are kept only after the thread has rewound to the start of its partitions."""

    def __init__(self, name: str, poll, seek_to_start, assignment):
        super().__init__(daemon=True, name=name)
        self._poll, self._seek, self._assignment = poll, seek_to_start, assignment
        self.parts: frozenset = frozenset()
        self.seen: list[tuple[int, int]] = []
        self.rewind = threading.Event()
        self.counting = threading.Event()
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self):
        try:
            while not self.stop.is_set():
                if self.rewind.is_set() and not self.counting.is_set():
                    self._seek()
                    self.counting.set()
                got = self._poll()
                if self.counting.is_set():
                    self.seen += got
                self.parts = frozenset(self._assignment())
        except BaseException as e:       # noqa: BLE001 - reported by the test
            self.error = e


def test_kafka_python_and_confluent_kafka_share_one_group(broker):
    import kafka
    from confluent_kafka import TopicPartition
    n = 300
    topic = new_topic(broker, n)
    group = f"mixed-{topic}"
    kp = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             session_timeout_ms=SESSION_MS, heartbeat_interval_ms=500)
    # kafka-python 3.0.12 can join before it has the topic's metadata; as leader it then
    # assigns nothing, rejoins once the metadata arrives, and if its poll() times out while
    # that rejoin is in flight it never completes the join (no assignment, no heartbeats:
    # docs/groups.md). Knowing the topic before subscribing keeps it off that path.
    assert kp.partitions_for_topic(topic) == set(range(PARTITIONS))
    kp.subscribe([topic])
    ck = confluent(broker, group)
    ck.subscribe([topic])

    def kp_poll():
        return [(r.partition, r.offset) for recs in kp.poll(timeout_ms=1000).values()
                for r in recs]

    def ck_poll():
        m = ck.poll(0.1)
        return [] if m is None or m.error() else [(m.partition(), m.offset())]

    def ck_seek():
        for tp in ck.assignment():
            ck.seek(TopicPartition(tp.topic, tp.partition, 0))
    members = {"kafka-python": _PollingMember("kafka-python", kp_poll, kp.seek_to_beginning,
                                              lambda: {tp.partition for tp in kp.assignment()}),
               "confluent": _PollingMember("confluent", ck_poll, ck_seek,
                                           lambda: {tp.partition for tp in ck.assignment()})}
    kpm, ckm = members["kafka-python"], members["confluent"]
    for m in members.values():
        m.start()
    try:
        # both members must hold a share before counting (what was read while the group
        # formed is read again from the start by each partition's final owner)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (
                kpm.parts and ckm.parts and not kpm.parts & ckm.parts
                and kpm.parts | ckm.parts == set(range(PARTITIONS))):
            time.sleep(0.05)
        kp_parts, ck_parts = kpm.parts, ckm.parts
        assert kp_parts | ck_parts == set(range(PARTITIONS)) and not kp_parts & ck_parts, \
            f"no shared assignment: {set(kp_parts)} {set(ck_parts)}"
        for m in members.values():
            m.rewind.set()
        deadline = time.monotonic() + 60
        while len(kpm.seen) + len(ckm.seen) < n and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        for m in members.values():
            m.stop.set()
        for m in members.values():
            m.join(30)
    assert kpm.error is None and ckm.error is None, (kpm.error, ckm.error)
    group_log = "".join(line for line in broker.log_text().splitlines(True)
                        if group in line) if hasattr(broker, "log_text") else ""
    assert (kpm.parts, ckm.parts) == (kp_parts, ck_parts), \
        f"the group rebalanced; the broker's log of it:\n{group_log}"
    seen: dict = {}
    for name, m in members.items():
        for key in m.seen:
            seen.setdefault(key, []).append(name)
    try:
        exactly_once(seen, n)
    except AssertionError as e:
        raise AssertionError(f"{e}\nthe broker's log of the group:\n{group_log}") from None
    kp.commit()
    kp.close()
    ck.close()


def test_aiokafka_group_roundrobin(broker):
    aiokafka = pytest.importorskip("aiokafka")
    n = 200
    topic = new_topic(broker, n)
    group = f"aio-{topic}"

    async def run():
        c = aiokafka.AIOKafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group,
                                      auto_offset_reset="earliest", enable_auto_commit=False)
        await c.start()
        seen = {}
        try:
            deadline = time.monotonic() + 60
            while len(seen) < n and time.monotonic() < deadline:
                batch = await c.getmany(timeout_ms=200)
                for tp, recs in batch.items():
                    for r in recs:
                        seen.setdefault((r.partition, r.offset), []).append(0)
            await c.commit()
            committed = {p: await c.committed(aiokafka.TopicPartition(topic, p))
                         for p in range(PARTITIONS)}
        finally:
            await c.stop()
        return seen, committed
    seen, committed = asyncio.run(run())
    exactly_once(seen, n)
    assert sum(committed.values()) == n


def test_kcat_balanced_consumer(broker):
    if KCAT is None:
        if os.environ.get("CI") == "true":
            pytest.fail("kcat is missing in CI (.ci/run installs it)")
        pytest.skip("the kcat binary is not installed (apt-get install kcat)")
    n = 100
    topic = new_topic(broker, n)
    group = f"kcat-{topic}"
    out = subprocess.run([KCAT, "-b", broker.bootstrap, "-G", group, "-X",
                          "auto.offset.reset=earliest", "-e", "-f", "%p:%o\\n", topic],
                         capture_output=True, timeout=90)
    assert out.returncode == 0, out.stderr.decode(errors="replace")[-2000:]
    lines = [x for x in out.stdout.decode().splitlines() if ":" in x]
    assert len(lines) == n and len(set(lines)) == n
    # kcat commits what it consumed on exit: the group's offsets cover every record
    c = confluent(broker, group)
    from confluent_kafka import TopicPartition
    committed = c.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
    c.close()
    assert sum(tp.offset for tp in committed) == n


def test_admin_clients_list_and_describe_groups(broker):
    """confluent-kafka's and kafka-python's admin clients read groups as they read Kafka's."""
    import kafka
    from confluent_kafka.admin import AdminClient
    topic = new_topic(broker, 10)
    group = f"adm-{topic}"
    c = confluent(broker, group, **{"client.id": "adm-member"})
    try:
        c.subscribe([topic])
        wait_assigned([c])
        c.commit(offsets=[TopicPartition(topic, 0, 2)], asynchronous=False)
        a = AdminClient({"bootstrap.servers": broker.bootstrap})
        listed = {g.group_id: g for g in a.list_consumer_groups().result(30).valid}
        assert str(listed[group].state).endswith("STABLE")
        d = a.describe_consumer_groups([group])[group].result(30)
        assert str(d.state).endswith("STABLE") and d.partition_assignor == "range"
        [m] = d.members
        assert m.client_id == "adm-member"
        assert sorted(tp.partition for tp in m.assignment.topic_partitions) == \
            list(range(PARTITIONS))
        ka = kafka.KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            kd = ka.describe_groups([group])[group]
            assert (kd["group_state"], kd["protocol_data"]) == ("Stable", "range")
            [km] = kd["members"]
            assert km["client_id"] == "adm-member" and km["client_host"] == "/127.0.0.1"
            assert km["member_assignment"]["assigned_partitions"] == \
                [{"topic": topic, "partitions": list(range(PARTITIONS))}]
            offsets = ka.list_group_offsets({group: None})[group]
            assert {tp.partition: o.offset for tp, o in offsets.items()} == {0: 2}
            assert {"group_id": group, "protocol_type": "consumer", "group_state": "Stable",
                    "group_type": "classic"} in ka.list_groups()
        finally:
            ka.close()
    finally:
        c.close()
