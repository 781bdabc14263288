"""Several registry instances on one cluster: one writer, forwarding, failover, same ids."""
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

from gregor.registry.server import RegistryThread

V1 = "application/vnd.schemaregistry.v1+json"
# the broker's group.min.session.timeout.ms is 6 s; a dead leader is noticed after this
ELECTION = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500}
WAIT_S = 6.0 * 10           # generous: many session timeouts under load


def post(url, path, body):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": V1, "Accept": V1})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def schema(i):
    return {"schema": json.dumps({"type": "record", "name": f"R{i}", "fields": []})}


def until(pred, what):
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"not within {WAIT_S}s: {what}")


def test_one_writer_forwarding_and_failover(broker):
    cfg = {"bootstrap.servers": broker.bootstrap_servers}
    a = RegistryThread(cfg, topic="_schemas_ha", election_settings=ELECTION).start()
    b = RegistryThread(cfg, topic="_schemas_ha", election_settings=ELECTION).start()
    try:
        ea, eb = a.registry.election, b.registry.election
        until(lambda: ea.leader_url() and ea.leader_url() == eb.leader_url()
              and (ea.is_leader() or eb.is_leader()), "both instances agree on a leader")
        assert ea.is_leader() != eb.is_leader()
        leader, follower = (a, b) if ea.is_leader() else (b, a)
        # a write on the follower is forwarded; both serve it after
        st, body = post(follower.url, "/subjects/ha-1/versions", schema(1))
        assert st == 200
        first = body["id"]
        # read-your-writes on the follower too: its answer came once it had read the write
        assert first in follower.registry.store.state.by_id
        assert leader.registry.service.get_version("ha-1", 1).id == first
        leader.stop()
        fe = follower.registry.election
        until(fe.is_leader, "the follower takes over")
        st, body = post(follower.url, "/subjects/ha-2/versions", schema(2))
        assert (st, body["id"]) == (200, first + 1)       # ids continue from the log
    finally:
        a.stop()
        b.stop()


def _registry_process(broker, topic_env):
    proc = subprocess.Popen([sys.executable, "-m", "gregor", "registry", "--bootstrap-server",
                             broker.bootstrap_servers, "--listen", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1", **topic_env})
    line = proc.stdout.readline()
    assert line.startswith("gregor schema registry ready on "), line
    return proc, line.split(" on ")[1].strip()


def test_kill_9_of_the_leader_during_writes_never_reuses_an_id(broker):
    env = {"GREGOR_REGISTRY_SESSION_TIMEOUT_MS": "6000"}
    p1, u1 = _registry_process(broker, env)
    p2, u2 = _registry_process(broker, env)
    acked: dict[int, int] = {}          # schema number -> id the registry answered
    stop = threading.Event()

    def writer(start, urls):
        i = start
        while not stop.is_set():
            for url in urls:
                try:
                    st, body = post(url, f"/subjects/kill-{i}/versions", schema(1000 + i))
                except OSError:
                    continue                 # that instance is gone
                if st == 200:
                    acked[i] = body["id"]
                    i += 2
                    break
                # 50003/50004 while the election settles: try again
    threads = [threading.Thread(target=writer, args=(n, [u1, u2] if n else [u2, u1]))
               for n in (0, 1)]
    for t in threads:
        t.start()
    try:
        until(lambda: len(acked) >= 10, "some writes before the kill")
        # p1 started first, alone, so it was elected, and leadership is sticky: kill it
        # without a chance to leave the group
        p1.send_signal(signal.SIGKILL)
        p1.wait(60)
        n = len(acked)
        until(lambda: len(acked) >= n + 10, "writes go on through the survivor")
    finally:
        stop.set()
        for t in threads:
            t.join(120)
        for p in (p1, p2):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.wait(60)
    ids = list(acked.values())
    assert len(ids) == len(set(ids)), "two different schemas were given one id"
    # and a fresh instance replaying the log agrees with every answer
    with RegistryThread({"bootstrap.servers": broker.bootstrap_servers}) as r:
        svc = r.registry.service
        for i, sid in acked.items():
            assert svc.get_version(f"kill-{i}", 1).id == sid
