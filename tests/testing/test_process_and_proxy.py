"""BrokerProcess (faults through the control channel, pause/resume, kill -9 and restart on the
same port) and TcpProxy in front of a broker that advertises it."""
from __future__ import annotations

import os
import select
import time
from pathlib import Path

import pytest

from gregor.testing import PASS, Broker, BrokerProcess
from gregor.testing.wire import WireClient


def produce(bootstrap: str, topic: str, values, timeout: float = 20.0, **config):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, **config})
    reports = []
    for v in values:
        p.produce(topic, v, partition=0,
                  on_delivery=lambda err, m: reports.append((err, m.offset())))
    assert p.flush(timeout) == 0
    return reports


def consume(bootstrap: str, topic: str, expect: int):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "check",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    try:
        for _ in range(300):
            m = c.poll(0.1)
            if m is not None and not m.error():
                got.append(m.value())
                if len(got) >= expect:
                    break
    finally:
        c.close()
    return got


@pytest.fixture(scope="module")
def process():
    with BrokerProcess(config={"num.partitions": 1}) as b:
        yield b


def test_process_broker_faults_hold_intercept_and_log(process):
    fault = process.faults.push("Produce", ["NOT_LEADER_OR_FOLLOWER"], topic="proc-faults")
    assert produce(process.bootstrap_servers, "proc-faults", [b"once"]) == [(None, 0)]
    assert fault.fired == 1 and fault.done
    assert consume(process.bootstrap_servers, "proc-faults", 1) == [b"once"]
    produced = [r for r in process.requests("Produce")
                if r["topic_data"][0]["name"] == "proc-faults"]
    assert len(produced) == 2 and produced[0].client_id == "rdkafka"

    def rename(request):            # runs in this process; edits reach the child
        request["topics"] = [{"name": "renamed-remotely"}]
        return PASS
    with process.intercept("Metadata", rename), WireClient(process.port) as c:
        resp = c.request("Metadata", 1, {"topics": [{"name": "asked"}]})
        assert [t["name"] for t in resp["topics"]] == ["renamed-remotely"]
    with WireClient(process.port) as c:
        with process.hold("ApiVersions") as gate:
            c.send("ApiVersions", 0, {})
            gate.wait_arrived(1)
            assert gate.held == 1 and not select.select([c.sock], [], [], 0.2)[0]
        c.receive("ApiVersions", 0)
    process.limit_versions("Fetch", 4)
    with WireClient(process.port) as c:
        table = {k["api_key"]: k["max_version"]
                 for k in c.request("ApiVersions", 0, {})["api_keys"]}
    assert table[1] == 4
    process.faults.clear()
    with pytest.raises(ValueError, match="did you mean"):
        process.faults.push("Fetchh", ["NONE"])


def test_kill_pause_and_restart_on_the_same_port_behind_a_proxy(tmp_path):
    b = BrokerProcess(tmp_path / "data", proxy=True).start()
    try:
        port, bootstrap = b.port, b.bootstrap_servers
        assert bootstrap == b.proxy.address
        assert produce(b.bootstrap_servers, "crash", [b"a"], acks="all") == [(None, 0)]
        b.pause()
        with WireClient(port) as c:       # a paused broker accepts nothing it can answer
            c.send("ApiVersions", 0, {})
            assert not select.select([c.sock], [], [], 0.3)[0]
            b.resume()
            c.receive("ApiVersions", 0)
        assert b.kill() == -9
        b.start()
        assert (b.port, b.bootstrap_servers) == (port, bootstrap)
        assert consume(b.bootstrap_servers, "crash", 1) == [b"a"]
        b.proxy.blackhole()               # clients only know the proxy: nothing gets through
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 1500})
        reports = []
        p.produce("crash", b"lost", on_delivery=lambda e, m: reports.append(e))
        p.flush(10)
        assert reports and reports[0] is not None
    finally:
        b.close()


def test_proxy_in_front_of_an_in_process_broker_carries_every_client_connection():
    with Broker(proxy=True) as broker:
        proxy = broker.proxy
        assert broker.bootstrap_servers == proxy.address != f"127.0.0.1:{broker.port}"
        broker.create_topic("through-proxy")
        assert produce(broker.bootstrap_servers, "through-proxy", [b"x"]) == [(None, 0)]
        # the network is gone: were any client connection direct (to an address the broker
        # advertised other than the proxy's), this producer would still deliver
        proxy.cut()
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": broker.bootstrap_servers,
                      "message.timeout.ms": 1500})
        reports = []
        p.produce("through-proxy", b"lost", on_delivery=lambda e, m: reports.append(e))
        p.flush(10)
        assert reports and reports[0] is not None
        proxy.heal()
        assert produce(broker.bootstrap_servers, "through-proxy", [b"y"]) == [(None, 1)]


def test_a_process_broker_does_not_outlive_its_test_process(tmp_path):
    """A test process killed with SIGKILL (no fixture teardown runs) leaves no broker behind."""
    import subprocess
    import sys
    code = ("import sys, time\n"
            f"sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})\n"
            "from gregor.testing import BrokerProcess\n"
            f"b = BrokerProcess({str(tmp_path / 'data')!r}); b.start()\n"
            "print(b.pid, flush=True); time.sleep(120)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    broker_pid = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(broker_pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(broker_pid, 9)
    raise AssertionError("the broker outlived the process that started it")
