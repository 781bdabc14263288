"""`gregor console --command-config FILE` against a secured broker: the settings file (Kafka's
properties format, as the other client commands read it) reaches every client the console
runs (admin, producer, consumer), over SASL_SSL with SCRAM and over TLS with a client
certificate the listener requires (mTLS)."""
from __future__ import annotations

import contextlib
import re
import subprocess
import sys

import httpx
import pytest

from tests.console.conftest import unique
from tests.support.broker import REPO_ROOT
from tests.support.secure_broker import USERS, start_secure_broker


@pytest.fixture(scope="module")
def secure(tmp_path_factory):
    # the SSL listener requires a client certificate: only mTLS gets in there
    b = start_secure_broker(tmp_path_factory.mktemp("console-secure"),
                            **{"listener.name.ssl.ssl.client.auth": "required"})
    try:
        yield b
    finally:
        b.stop()


@contextlib.contextmanager
def console(bootstrap: str, props_file):
    proc = subprocess.Popen(
        [sys.executable, "-m", "gregor", "console", "-b", bootstrap, "--listen", "127.0.0.1:0",
         "--command-config", str(props_file), "--lag-interval", "0.5"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(REPO_ROOT))
    try:
        line = proc.stdout.readline()
        m = re.fullmatch(r"gregor console ready on (http://127\.0\.0\.1:\d+)\n", line)
        assert m, line + proc.stdout.read() if proc.poll() is not None else line
        with httpx.Client(base_url=m.group(1), timeout=20) as http:
            http.get("/")                                        # the CSRF cookie
            http.headers["x-csrf-token"] = http.cookies["gregor_console_csrf"]
            yield http
    finally:
        proc.terminate()
        proc.wait(15)


def test_console_over_sasl_ssl_with_scram(secure, tmp_path):
    props = tmp_path / "client.properties"
    props.write_text(
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        f'    username="alice" password="{USERS["alice"]}";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={secure.pki.ca_pem}\n")
    with console(f"localhost:{secure.listeners['SASL_SSL']}", props) as http:
        assert http.get("/api/cluster").json()["brokers"]
        t = unique("sasl")
        assert http.post("/api/topics", json={"name": t, "partitions": 1}).json()["ok"]
        for v in ("first", "second"):                          # the console's producer
            r = http.post(f"/api/topics/{t}/produce", json={"value": v, "partition": 0})
            assert r.status_code == 200 and r.json()["ok"], r.text
        rows = http.get(f"/api/topics/{t}/messages", params={"order": "oldest"}).json()
        assert [r["value"] for r in rows["records"]] == ["first", "second"]   # its consumer
        assert http.get(f"/api/topics/{t}").json()["partitions"][0]["latest"] == 2


def test_console_over_mtls(secure, tmp_path):
    cert, key = secure.pki.client("console")
    props = tmp_path / "mtls.properties"
    props.write_text(
        "security.protocol=SSL\n"
        f"ssl.ca.location={secure.pki.ca_pem}\n"
        f"ssl.certificate.location={cert}\nssl.key.location={key}\n")
    with console(f"localhost:{secure.listeners['SSL']}", props) as http:
        d = http.get("/api/cluster").json()
        assert d["brokers"] and d["cluster_id"]
        t = unique("mtls")
        assert http.post("/api/topics", json={"name": t, "partitions": 2}).json()["ok"]
        assert len(http.get(f"/api/topics/{t}").json()["partitions"]) == 2
