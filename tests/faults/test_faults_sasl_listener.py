"""The hostile-frame fuzzer against a SASL listener: garbage, truncated and oversized frames,
every API before authentication, SASL exchanges with wrong credentials and mangled tokens.
The broker closes those connections, stays up, keeps its memory bounded, and nobody gets in:
no request of a gated API reaches its handler, the canary topics the fuzz tries to create
never exist, and a real client with the right password still works afterwards."""
from __future__ import annotations

import random
import re
import socket
import struct
import threading
import time
import urllib.request

import pytest

from tests.faults import frames
from tests.faults.checks import tracebacks
from tests.support.sasl_wire import connect, login
from tests.support.secure_broker import USERS, start_secure_broker

pytestmark = pytest.mark.interop

FUZZ_FRAMES = 3_000
FUZZ_THREADS = 4
FUZZ_DEADLINE_S = 120.0
RSS_GROWTH_LIMIT = 300 * 1024 * 1024
CANARIES = ("canary-created", "canary-auto", "canary-produced")
SAFE = {17, 18, 36}          # ApiVersions and the SASL requests may be answered


@pytest.fixture(scope="module")
def b(tmp_path_factory):
    broker = start_secure_broker(tmp_path_factory.mktemp("sasl-fuzz"), metrics_port=0,
                                 **{"sasl.server.max.receive.size": "8192"})
    try:
        yield broker
    finally:
        broker.stop()


def sasl_handshake(corr: int, mechanism: str, version: int) -> bytes:
    return frames.frame(17, version, corr, frames.string(mechanism))


def sasl_authenticate_v1(corr: int, token: bytes) -> bytes:
    return frames.frame(36, 1, corr, frames.i32(len(token)) + token)


def sasl_seeds() -> list[bytes]:
    wrong_plain = b"\0alice\0not-the-password"
    scram_first = b"n,,n=alice,r=fuzznonce0123456789"
    return [
        frames.api_versions_v0(1),
        sasl_handshake(2, "PLAIN", 1), sasl_handshake(3, "SCRAM-SHA-256", 1),
        sasl_handshake(4, "SCRAM-SHA-512", 0), sasl_handshake(5, "GSSAPI", 1),
        sasl_authenticate_v1(6, wrong_plain), sasl_authenticate_v1(7, scram_first),
        sasl_authenticate_v1(8, b"c=biws,r=fuzznonce0123456789xyz,p=AAAA"),
        frames.i32(len(wrong_plain)) + wrong_plain,          # a legacy v0 raw token
        frames.create_topics_v0(9, CANARIES[0]),
        frames.metadata_v1(10, [CANARIES[1]]),
        frames.produce_v3(11, CANARIES[2], 0, frames.record_batch([b"in"])),
    ]


def _worker(port, seeds, rnd, counters, lock, stop):
    corr = 100
    while not stop.is_set():
        with lock:
            if counters["frames"] >= FUZZ_FRAMES:
                return
        try:
            s = frames.connect(port, timeout=5)
        except OSError:
            with lock:
                counters["connect_errors"] += 1
            time.sleep(0.05)
            continue
        sent = 0
        try:
            batch = [rnd.choice(seeds[:5]) for _ in range(rnd.randrange(0, 3))]  # a real start
            for _ in range(rnd.randrange(1, 6)):
                r = rnd.random()
                if r < 0.3:
                    batch.append(rnd.choice(seeds))
                elif r < 0.35:
                    batch.append(frames.HTTP_GET)
                elif r < 0.4:
                    batch.append(frames.i32(rnd.randrange(8193, 1 << 30)) + rnd.randbytes(64))
                else:
                    batch.append(frames.mutate(rnd, rnd.choice(seeds)))
            for f in batch:
                corr += 1
                s.sendall(f)
                sent += 1
            s.shutdown(socket.SHUT_WR)
            frames.closed_by_peer(s, 1.0)
        except OSError:
            pass
        finally:
            s.close()
            with lock:
                counters["frames"] += sent
                counters["connections"] += 1


def _requests_by_api(b) -> dict[str, float]:
    port = int(re.search(r"metrics on http://127\.0\.0\.1:(\d+)/metrics", b.output()).group(1))
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return {m.group(1): float(m.group(2)) for m in re.finditer(
        r'^gregor_broker_requests_total\{api="(\w+)"\} (\S+)$', text, re.M)}


def test_fuzz_a_sasl_listener_and_nobody_gets_in(b):
    from gregor.protocol import messages
    port = b.listeners["SASL_PLAINTEXT"]
    before = _requests_by_api(b)
    baseline = frames.rss_bytes(b.pid)
    peak = [baseline]
    stop = threading.Event()

    def watch():
        while not stop.wait(0.05):
            try:
                peak[0] = max(peak[0], frames.rss_bytes(b.pid))
            except (OSError, RuntimeError):
                return
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    counters = {"frames": 0, "connections": 0, "connect_errors": 0}
    lock = threading.Lock()
    seeds = sasl_seeds() + frames.seed_frames("fuzz-target")
    workers = [threading.Thread(target=_worker, daemon=True,
                                args=(port, seeds, random.Random(77 + i), counters, lock, stop))
               for i in range(FUZZ_THREADS)]
    for w in workers:
        w.start()
    deadline = time.monotonic() + FUZZ_DEADLINE_S
    for w in workers:
        w.join(max(0.1, deadline - time.monotonic()))
    stop.set()
    watcher.join(5)
    print(f"sasl fuzz: {counters}; RSS {baseline >> 20} MiB -> peak {peak[0] >> 20} MiB")
    assert b.proc.poll() is None, f"the broker died:\n{b.log_text()[-3000:]}"
    assert counters["frames"] >= FUZZ_FRAMES, counters
    assert counters["connect_errors"] < counters["connections"] // 100 + 5, counters
    assert peak[0] - baseline < RSS_GROWTH_LIMIT
    # nobody got in: no gated API reached its handler during the fuzz ...
    after = _requests_by_api(b)
    # (the counters are read right: the fuzz's ApiVersions requests were handled)
    assert after.get("ApiVersions", 0) > before.get("ApiVersions", 0), after
    gated = {name: after[name] - before.get(name, 0) for name in after
             if after[name] != before.get(name, 0)
             and messages.BY_NAME[name].key not in SAFE}
    assert not gated, f"requests of gated APIs were handled: {gated}"
    # ... no canary topic exists, and the right password still works
    with connect(port) as c:
        assert login(c, "SCRAM-SHA-512", "alice", USERS["alice"])["error_code"] == 0
        body = c.request("Metadata", 1, {"topics": None})
    names = {t["name"] for t in body["topics"]}
    assert not names & set(CANARIES), f"the fuzz created {names & set(CANARIES)}"
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": f"localhost:{port}",
                         "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
                         "sasl.username": "bob", "sasl.password": USERS["bob"]})
    assert admin.list_topics(timeout=30).brokers
    tb = tracebacks(b)
    assert not tb, f"{len(tb)} tracebacks in the broker output, first:\n{tb[0]}"


@pytest.mark.parametrize("size", [8193, 1 << 20, 0x7FFFFFFF])
def test_oversize_sasl_frames_are_closed_with_bounded_memory(b, size):
    port = b.listeners["SASL_PLAINTEXT"]
    before = frames.rss_bytes(b.pid)
    with frames.connect(port) as s:
        s.sendall(sasl_handshake(1, "PLAIN", 1))
        frames.read_response(s)
        s.sendall(struct.pack(">i", size) + b"\x00\x24\x00\x01" + b"\0" * 4000)
        assert frames.closed_by_peer(s, 10)
    assert frames.rss_bytes(b.pid) - before < RSS_GROWTH_LIMIT
