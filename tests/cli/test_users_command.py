"""`gregor users add|list|remove` offline (the data directory, before the broker runs) and
online (a SASL_SSL broker through --command-config, Kafka's properties file), and
--command-config on the other client commands."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from gregor.broker.security.credentials import FILE_NAME, FileCredentialStore
from gregor.cli.main import cli
from tests.support.sasl_wire import connect, login
from tests.support.secure_broker import USERS, start_secure_broker


def run(args, ok=True, input=None):
    result = CliRunner().invoke(cli, args, input=input, catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    return result


def test_offline_add_list_remove(tmp_path):
    data = tmp_path / "data"
    pw = tmp_path / "pw"
    pw.write_text("first-line-pw\nsecond line ignored\n")
    out = run(["users", "add", "alice", "--password-file", str(pw), "--data-dir", str(data)])
    assert "SCRAM-SHA-256, SCRAM-SHA-512" in out.output
    run(["users", "add", "bob", "-m", "scram-sha-512", "--iterations", "8192",
         "--password-file", str(pw), "--data-dir", str(data)])
    out = run(["users", "list", "--data-dir", str(data)])
    assert out.output.splitlines() == [
        "SCRAM credential configs for user-principal 'alice' are "
        "SCRAM-SHA-256=iterations=4096, SCRAM-SHA-512=iterations=4096",
        "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-512=iterations=8192"]
    cred = FileCredentialStore(data).credential("alice", "SCRAM-SHA-512")
    assert cred is not None and "first-line-pw" not in (data / FILE_NAME).read_text()
    run(["users", "remove", "alice", "--data-dir", str(data)])
    assert "alice" not in run(["users", "list", "--data-dir", str(data)]).output
    out = run(["users", "remove", "nobody", "-m", "SCRAM-SHA-256", "--data-dir", str(data)],
              ok=False)
    assert out.exit_code != 0 and "does not exist" in out.output


def test_password_sources(tmp_path):
    data = str(tmp_path / "data")
    out = run(["users", "add", "carol", "--password", "on-the-command-line", "--data-dir", data])
    assert "visible to other users" in out.output
    out = run(["users", "add", "dave", "--data-dir", data], ok=False)   # no tty, no file
    assert out.exit_code != 0 and "--password-file" in out.output
    out = run(["users", "add", "erin", "--iterations", "100", "--password", "x",
               "--data-dir", data], ok=False)
    assert out.exit_code != 0 and "4096" in out.output


@pytest.fixture(scope="module")
def b(tmp_path_factory):
    broker = start_secure_broker(tmp_path_factory.mktemp("cli-secure"))
    try:
        yield broker
    finally:
        broker.stop()


def test_online_users_and_topics_through_command_config(b, tmp_path):
    props = tmp_path / "admin.properties"
    props.write_text(
        "# Kafka's client properties, as kafka-configs --command-config reads them\n"
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        f'    username="alice" password="{USERS["alice"]}";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={b.pki.ca_pem}\n")
    pw = tmp_path / "pw"
    pw.write_text("frank-pw\n")
    base = ["-b", f"localhost:{b.listeners['SASL_SSL']}", "--command-config", str(props)]
    run(["users", "add", "frank", "--password-file", str(pw), *base])
    assert "user-principal 'frank'" in run(["users", "list", "frank", *base]).output
    with connect(b.listeners["SASL_PLAINTEXT"]) as c:
        assert login(c, "SCRAM-SHA-256", "frank", "frank-pw")["error_code"] == 0
    run(["topics", "create", "cli-secure-topic", *base])
    assert "cli-secure-topic" in run(["topics", "list", *base]).output.split()
    run(["users", "remove", "frank", *base])
    out = run(["topics", "list", "--timeout", "3", "-b", f"localhost:{b.listeners['SASL_SSL']}"],
              ok=False)
    assert out.exit_code != 0            # no credentials: refused
