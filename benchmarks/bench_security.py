"""TLS and SASL cost, side by side on one broker process with a PLAINTEXT, a SASL_PLAINTEXT and
a SASL_SSL listener, confluent-kafka (librdkafka) as the client.

    .venv/bin/python benchmarks/bench_security.py [--records 1000000] [--repeat 2]
                                                  [--connections 30]

1. produce throughput: --records records (100-byte values, 10-byte keys, acks=1, linger.ms=5,
   one partition) over PLAINTEXT and over SASL_SSL (SCRAM-SHA-512, TLS 1.3); msgs/s, MB/s and
   the ratio SASL_SSL / PLAINTEXT (target >= 0.8: TLS should cost what OpenSSL costs).
   Timed after a first record is delivered (connecting and authenticating excluded).
2. fetch throughput: a consumer (assign, from offset 0, fetch.queue.backoff.ms=10) reads them
   back over each listener, timed from the first record; the same ratio.
3. connection set-up: a new connection up to its first Metadata answer (TCP connect,
   ApiVersions, for SCRAM SaslHandshake + 2 SaslAuthenticate, Metadata), with a minimal
   blocking client so client overheads do not hide the broker's: PLAINTEXT, SCRAM-SHA-512 over
   SASL_PLAINTEXT and over SASL_SSL, and the PBKDF2 a SCRAM client must compute per login
   (Hi(password, salt, 4096) with SHA-512). Ratio: SCRAM / (PLAINTEXT + PBKDF2) (target <= 2).

The rounds alternate between the listeners; the best of --repeat rounds is reported, with the
broker process's CPU seconds per run (the steadier figure: on a 2-core machine the client's own
encryption competes with everything else). This machine is shared: compare ratios within one
run, not absolute numbers across runs.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from gregor.broker.security.credentials import FileCredentialStore  # noqa: E402
from gregor.protocol import messages  # noqa: E402
from gregor.protocol.header import decode_response, encode_request  # noqa: E402
from gregor.security.scram import MECHANISMS, ScramClient, credential_from_password  # noqa: E402

KEY_BYTES, VALUE_BYTES = 10, 100
USER, PASSWORD = "bench", "bench-secret"
LISTENER = re.compile(r"gregor broker listener (\S+) on (\S+):(\d+)")
READY = re.compile(r"gregor broker ready on")


class Broker:
    def __init__(self):
        import trustme
        self.dir = Path(tempfile.mkdtemp(prefix="bench-security-"))
        ca = trustme.CA()
        ca.cert_pem.write_to_path(str(self.dir / "ca.pem"))
        ca.issue_cert("localhost").private_key_and_cert_chain_pem.write_to_path(
            str(self.dir / "server.pem"))
        self.ca = str(self.dir / "ca.pem")
        data = self.dir / "data"
        FileCredentialStore(data).write_user_configs({USER: {
            m: credential_from_password(mech, PASSWORD).to_text()
            for m, mech in MECHANISMS.items()}})
        names = ("PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL")
        self.settings = {
            "listeners": ",".join(f"{n}://127.0.0.1:0" for n in names),
            "advertised.listeners": ",".join(f"{n}://localhost:0" for n in names),
            "ssl.keystore.type": "PEM", "ssl.keystore.location": str(self.dir / "server.pem"),
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "gregor.fsync.acks.all": "false"}
        self.data = data
        self.ports: dict[str, int] = {}
        self.proc = None

    def start(self) -> "Broker":
        env = dict(os.environ, PYTHONUNBUFFERED="1",
                   PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gregor", "broker", "--data-dir", str(self.data),
             *[a for k, v in self.settings.items() for a in ("--set", f"{k}={v}")]],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=REPO)
        for line in self.proc.stdout:
            m = LISTENER.search(line)
            if m:
                self.ports[m.group(1)] = int(m.group(3))
            if READY.search(line):
                break
        if len(self.ports) != 3:
            self.stop()
            raise SystemExit("the broker did not start its three listeners")
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()
        return self

    def conf(self, listener: str) -> dict:
        conf = {"bootstrap.servers": f"localhost:{self.ports[listener]}",
                "security.protocol": listener}
        if listener != "PLAINTEXT":
            conf.update({"sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": USER,
                         "sasl.password": PASSWORD})
        if listener == "SASL_SSL":
            conf["ssl.ca.location"] = self.ca
        return conf

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def produce(conf: dict, topic: str, n: int) -> float:
    p = Producer({**conf, "acks": 1, "linger.ms": 5, "queue.buffering.max.messages": 1000000,
                  "batch.size": 1000000})
    value = b"v" * VALUE_BYTES
    p.produce(topic, value, b"warm-up", partition=0)      # connected and authenticated
    assert p.flush(60) == 0
    started = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, value, b"%010d" % i, partition=0)
                break
            except BufferError:
                p.poll(0.01)
    assert p.flush(120) == 0
    return n / (time.perf_counter() - started)


def fetch(conf: dict, topic: str, n: int) -> float:
    c = Consumer({**conf, "group.id": f"bench-{topic}", "enable.auto.commit": False,
                  "fetch.queue.backoff.ms": 10})
    c.assign([TopicPartition(topic, 0, 0)])
    got, started = 0, None
    while got < n:
        for m in c.consume(10000, 1.0):
            if not m.error():
                if started is None:          # from the first record: connecting excluded
                    started = time.perf_counter()
                got += 1
    elapsed = time.perf_counter() - started
    c.close()
    return (n - 1) / elapsed


# -- connection set-up with a minimal blocking client ------------------------------------------

def _request(sock, api: str, version: int, body: dict, corr: int) -> dict:
    sock.sendall(encode_request(messages.api(api), version, corr, "bench", body))
    size = struct.unpack(">i", _exactly(sock, 4))[0]
    return decode_response(messages.api(api), version, _exactly(sock, size))[1]


def _exactly(sock, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return bytes(buf)


def connect_once(port: int, scram: bool, tls: ssl.SSLContext | None) -> None:
    sock = socket.create_connection(("localhost", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if tls is not None:
        sock = tls.wrap_socket(sock, server_hostname="localhost")
    try:
        _request(sock, "ApiVersions", 0, {}, 1)
        if scram:
            assert _request(sock, "SaslHandshake", 1, {"mechanism": "SCRAM-SHA-512"},
                            2)["error_code"] == 0
            client = ScramClient(MECHANISMS["SCRAM-SHA-512"], USER, PASSWORD)
            first = _request(sock, "SaslAuthenticate", 1,
                             {"auth_bytes": client.first().encode()}, 3)
            final = _request(sock, "SaslAuthenticate", 1,
                             {"auth_bytes": client.final(first["auth_bytes"]).encode()}, 4)
            assert final["error_code"] == 0
            client.verify(final["auth_bytes"])
        assert _request(sock, "Metadata", 1, {"topics": None}, 5)["brokers"]
    finally:
        sock.close()


def connect_time(port: int, n: int, scram: bool, tls=None) -> float:
    connect_once(port, scram, tls)                  # warm up
    started = time.perf_counter()
    for _ in range(n):
        connect_once(port, scram, tls)
    return (time.perf_counter() - started) / n


def pbkdf2_time(n: int) -> float:
    started = time.perf_counter()
    for i in range(n):
        hashlib.pbkdf2_hmac("sha512", PASSWORD.encode(), b"salt-%d" % i, 4096)
    return (time.perf_counter() - started) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--connections", type=int, default=30)
    args = ap.parse_args()
    b = Broker().start()
    try:
        admin = AdminClient(b.conf("PLAINTEXT"))
        best = {"PLAINTEXT": [0.0, 0.0], "SASL_SSL": [0.0, 0.0]}
        cpu = {"PLAINTEXT": [0.0, 0.0], "SASL_SSL": [0.0, 0.0]}     # broker CPU, all rounds
        for r in range(args.repeat):
            topics = {lst: f"bench-{lst.lower()}-{r}" for lst in best}
            for f in admin.create_topics([NewTopic(t, 1, 1) for t in topics.values()]).values():
                f.result(30)
            for i, run in enumerate((produce, fetch)):
                for lst in best:
                    before = cpu_seconds(b.proc.pid)
                    best[lst][i] = max(best[lst][i], run(b.conf(lst), topics[lst], args.records))
                    cpu[lst][i] += cpu_seconds(b.proc.pid) - before
        mb = (KEY_BYTES + VALUE_BYTES) / 1e6
        print(f"records: {args.records}, best of {args.repeat} rounds, confluent-kafka "
              f"(librdkafka) client, SASL_SSL = SCRAM-SHA-512 over TLS")
        for i, what in enumerate(("produce", "fetch")):
            plain, secure = best["PLAINTEXT"][i], best["SASL_SSL"][i]
            print(f"{what:8s} PLAINTEXT {plain:10,.0f} msgs/s ({plain * mb:6.1f} MB/s)   "
                  f"SASL_SSL {secure:10,.0f} msgs/s ({secure * mb:6.1f} MB/s)   "
                  f"ratio SASL_SSL/PLAINTEXT {secure / plain:.2f}x (target >= 0.8x); broker "
                  f"CPU per run {cpu['PLAINTEXT'][i] / args.repeat:.2f} s vs "
                  f"{cpu['SASL_SSL'][i] / args.repeat:.2f} s")
        tls = ssl.create_default_context(cafile=b.ca)
        plain = scram = scram_tls = None
        for _ in range(args.repeat):
            p = connect_time(b.ports["PLAINTEXT"], args.connections, False)
            s = connect_time(b.ports["SASL_PLAINTEXT"], args.connections, True)
            st = connect_time(b.ports["SASL_SSL"], args.connections, True, tls)
            plain = p if plain is None else min(plain, p)
            scram = s if scram is None else min(scram, s)
            scram_tls = st if scram_tls is None else min(scram_tls, st)
        kdf = pbkdf2_time(args.connections)
        print(f"connect  to first Metadata, mean of {args.connections}: PLAINTEXT "
              f"{plain * 1e3:.2f} ms, SCRAM-SHA-512 {scram * 1e3:.2f} ms, SCRAM-SHA-512 over "
              f"TLS {scram_tls * 1e3:.2f} ms; PBKDF2 alone (4096 x SHA-512, the client's part "
              f"of a login) {kdf * 1e3:.2f} ms")
        print(f"connect  ratio SCRAM / (PLAINTEXT + PBKDF2) {scram / (plain + kdf):.2f}x "
              f"(target <= 2x); over TLS {scram_tls / (plain + kdf):.2f}x")
    finally:
        b.stop()


if __name__ == "__main__":
    main()
