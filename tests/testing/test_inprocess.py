"""gregor.testing.Broker: the real broker on its own thread, reached by real clients; nothing
left behind after stop()."""
from __future__ import annotations

import asyncio
import os

import pytest

from gregor.testing import Broker


_CYCLES = """
import json, os, tempfile, threading
from gregor.testing import Broker
from gregor.testing.wire import WireClient

def fds():
    return len(os.listdir("/proc/self/fd"))

def temp_dirs():
    return {n for n in os.listdir(tempfile.gettempdir()) if n.startswith("gregor-test-")}

with Broker() as b:      # warm up: process-wide singletons (the rolled-segment flusher) start
    b.create_topic("warm")
threads = {t.ident for t in threading.enumerate()}
before_fds, before_dirs = fds(), temp_dirs()
seen = set()
for i in range(100):
    with Broker() as b:
        seen.add(str(b.data_dir))
        if i % 10 == 0:          # now and then with topics and a client connection
            b.create_topic(f"t{i}", partitions=2)
            with WireClient(b.port) as c:
                c.request("Metadata", 1, {"topics": None})
print(json.dumps({
    "brokers": len(seen),
    "new_threads": sorted(t.name for t in threading.enumerate() if t.ident not in threads),
    "fds": [before_fds, fds()],
    "new_dirs": sorted(temp_dirs() - before_dirs),
    "left": sorted(d for d in seen if os.path.exists(d))}))
"""


def test_hundred_start_stop_cycles_leave_no_threads_fds_or_directories():
    # in a fresh interpreter: nothing another test left running can come or go meanwhile
    import json
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", _CYCLES], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["brokers"] == 100
    assert got["new_threads"] == []
    assert got["fds"][1] <= got["fds"][0], got["fds"]
    assert got["new_dirs"] == [] and got["left"] == []


def test_given_data_dir_is_kept_and_restart_keeps_data_and_port(tmp_path):
    from confluent_kafka import Consumer, Producer, TopicPartition
    b = Broker(data_dir=tmp_path / "data").start()
    try:
        b.create_topic("kept")
        p = Producer({"bootstrap.servers": b.bootstrap_servers})
        p.produce("kept", b"before restart")
        assert p.flush(10) == 0
        port = b.port
        b.restart()
        assert b.port == port
        c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "g",
                      "enable.auto.commit": False})
        c.assign([TopicPartition("kept", 0, 0)])
        msg = None
        for _ in range(50):
            msg = c.poll(0.2)
            if msg is not None and not msg.error():
                break
        c.close()
        assert msg is not None and msg.value() == b"before restart"
    finally:
        b.stop()
    assert (tmp_path / "data" / "kept-0").is_dir()


def test_works_with_kafka_python_and_aiokafka_next_to_the_tests_own_event_loop():
    from kafka import KafkaConsumer, KafkaProducer
    with Broker({"num.partitions": 2}) as b:
        b.create_topic("mixed")
        kp = KafkaProducer(bootstrap_servers=b.bootstrap_servers)
        kp.send("mixed", b"from kafka-python").get(10)
        kp.close()

        async def with_aiokafka():   # the test's own loop; the broker has another
            from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
            prod = AIOKafkaProducer(bootstrap_servers=b.bootstrap_servers)
            await prod.start()
            try:
                await prod.send_and_wait("mixed", b"from aiokafka")
            finally:
                await prod.stop()
            cons = AIOKafkaConsumer("mixed", bootstrap_servers=b.bootstrap_servers,
                                    auto_offset_reset="earliest", group_id="mixed-readers")
            await cons.start()
            try:
                got = []
                while len(got) < 2:
                    batch = await asyncio.wait_for(cons.getmany(timeout_ms=500), 20)
                    got += [m.value for msgs in batch.values() for m in msgs]
                return sorted(got)
            finally:
                await cons.stop()
        assert asyncio.run(with_aiokafka()) == [b"from aiokafka", b"from kafka-python"]
        kc = KafkaConsumer("mixed", bootstrap_servers=b.bootstrap_servers,
                           auto_offset_reset="earliest", consumer_timeout_ms=3000)
        assert sorted(m.value for m in kc) == [b"from aiokafka", b"from kafka-python"]
        kc.close()


def test_bad_settings_and_topics_fail_at_once_with_the_reason():
    with pytest.raises(ValueError, match="did you mean num.partitions"):
        Broker({"num.partitons": 3})
    with Broker() as b:
        b.create_topic("twice")
        from gregor.protocol.errors import TopicAlreadyExistsError
        with pytest.raises(TopicAlreadyExistsError, match="already exists"):
            b.create_topic("twice")
        assert b.topics() == ["twice"]
        b.delete_topic("twice")
        assert b.topics() == []
    with pytest.raises(RuntimeError, match="not running"):
        b.faults.push("Produce", ["NOT_LEADER_OR_FOLLOWER"])


def test_kcat_and_gregors_own_clients_reach_it():
    import shutil
    import subprocess
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if kcat is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("kcat is required in CI (.ci/install-system-packages installs it)")
        pytest.skip("kcat is not installed (apt-get install kcat)")
    from gregor import Consumer, Producer
    with Broker() as b:
        b.create_topic("cat")
        subprocess.run([kcat, "-b", b.bootstrap_servers, "-P", "-t", "cat", "-p", "0"],
                       input=b"from kcat\n", check=True, timeout=60)
        p = Producer({"bootstrap.servers": b.bootstrap_servers})
        p.send("cat", b"from gregor", partition=0).get(20)
        p.close()
        out = subprocess.run([kcat, "-b", b.bootstrap_servers, "-C", "-t", "cat", "-e",
                              "-f", "%s\n"], capture_output=True, check=True, timeout=60)
        assert out.stdout.split(b"\n")[:2] == [b"from kcat", b"from gregor"]
        c = Consumer({"bootstrap.servers": b.bootstrap_servers})
        c.assign([("cat", 0, 0)])
        got = []
        for _ in range(100):
            got += [r.value for r in c.poll(0.2)]
            if len(got) >= 2:
                break
        c.close()
        assert got == [b"from kcat", b"from gregor"]
