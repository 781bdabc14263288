"""The client side of the inter-broker listener: settings (sans-I/O) and BrokerConnection, the
connection every broker-to-broker request goes through, against a real broker process with
SSL and SASL listeners (TLS with the broker's own key store as client certificate, SCRAM and
PLAIN logins, wrong passwords, KIP-368 re-authentication, a connection the other side closed)."""
from __future__ import annotations

import asyncio
import ssl

import pytest

import gregor.broker.cluster.broker_connection as bc
from gregor.broker.cluster.broker_connection import AuthenticationFailed, BrokerConnection
from gregor.broker.config import BrokerConfig, ConfigError
from gregor.broker.listeners import ListenerConfig
from gregor.broker.security.inter_broker import InterBrokerSecurity, inter_broker_security
from gregor.protocol import messages
from gregor.protocol.header import decode_request, encode_response
from tests.support.secure_broker import USERS, start_secure_broker
from tests.support.tls import Pki

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule required " \
        "username=\"{}\" password=\"{}\";"
METADATA = messages.api("Metadata")


def cluster_config(pki: Pki | None = None, **values) -> BrokerConfig:
    base = {"zookeeper.connect": "127.0.0.1:2181/x",
            "listeners": "SASL_SSL://127.0.0.1:0,CLIENT://127.0.0.1:0",
            "listener.security.protocol.map": "SASL_SSL:SASL_SSL,CLIENT:PLAINTEXT",
            "security.inter.broker.protocol": "SASL_SSL",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512"}
    if pki is not None:
        base.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server_pem),
                     "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca_pem)})
    base.update(values)
    return BrokerConfig(base)


def build(config: BrokerConfig) -> InterBrokerSecurity:
    return inter_broker_security(config, ListenerConfig.from_config(config))


# -- settings ------------------------------------------------------------------------------

def test_kafkas_default_mechanism_gssapi_is_refused_with_what_to_set(tmp_path):
    with pytest.raises(ConfigError, match=r"GSSAPI, Kafka's default, is not supported.*"
                                          r"set sasl.mechanism.inter.broker.protocol"):
        build(cluster_config(Pki(tmp_path)))


def test_the_mechanism_must_be_enabled_on_the_inter_broker_listener(tmp_path):
    with pytest.raises(ConfigError, match="must be one of the mechanisms .* SASL_SSL"):
        build(cluster_config(Pki(tmp_path), **{
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256"}))


def test_credentials_come_from_the_listeners_jaas_entry_for_the_mechanism(tmp_path):
    pki = Pki(tmp_path)
    with pytest.raises(ConfigError, match=r"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"
                                          r" is not set"):
        build(cluster_config(pki, **{"sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512"}))
    sec = build(cluster_config(pki, **{
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": SCRAM.format("broker", "s3cr3t")}))
    assert (sec.listener, sec.protocol, sec.mechanism, sec.username) == \
        ("SASL_SSL", "SASL_SSL", "SCRAM-SHA-512", "broker")
    assert sec.ssl_context.check_hostname and sec.ssl_context.verify_mode == ssl.CERT_REQUIRED
    assert "s3cr3t" not in repr(sec)
    # the unprefixed entry serves when the listener has none (Kafka's precedence)
    sec = build(cluster_config(pki, **{"sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
                                       "sasl.jaas.config": SCRAM.format("b2", "x")}))
    assert sec.username == "b2"


def test_a_jaas_entry_without_a_password_is_refused_without_quoting_secrets(tmp_path):
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required ' \
           'user_admin="top-secret";'
    with pytest.raises(ConfigError) as e:
        build(cluster_config(Pki(tmp_path), **{
            "sasl.enabled.mechanisms": "PLAIN", "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas}))
    assert "needs credentials" in str(e.value) and "top-secret" not in str(e.value)


def test_host_name_verification_follows_endpoint_identification_algorithm(tmp_path):
    sec = build(cluster_config(Pki(tmp_path), **{
        "listener.security.protocol.map": "SASL_SSL:SSL,CLIENT:PLAINTEXT",
        "ssl.endpoint.identification.algorithm": ""}))
    assert sec.protocol == "SSL" and sec.sasl is None
    assert not sec.ssl_context.check_hostname
    assert sec.ssl_context.verify_mode == ssl.CERT_REQUIRED


def test_a_single_node_never_connects_to_brokers_so_it_is_not_checked(tmp_path):
    cfg = cluster_config(Pki(tmp_path))
    cfg.set("zookeeper.connect", None)
    assert build(cfg).protocol == "PLAINTEXT"


# -- against a broker process ----------------------------------------------------------------

@pytest.fixture(scope="module")
def b(tmp_path_factory):
    broker = start_secure_broker(
        tmp_path_factory.mktemp("inter-broker"), extra_listeners=["REAUTH"],
        **{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,"
           "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,REAUTH:SASL_SSL",
           "listener.name.reauth.sasl.enabled.mechanisms": "SCRAM-SHA-512",
           "listener.name.reauth.connections.max.reauth.ms": "3000",
           "listener.name.ssl.ssl.client.auth": "required"})
    try:
        yield broker
    finally:
        broker.stop()


def security_for(b, listener: str, user: str = "alice", password: str | None = None,
                 mechanism: str = "SCRAM-SHA-512", **extra) -> InterBrokerSecurity:
    """The inter-broker security a cluster member with b's settings would build for listener,
    logging in as user."""
    values = {k: v for k, v in b.settings.items() if not k.startswith("advertised")}
    values.update({"zookeeper.connect": "127.0.0.1:1/x", "inter.broker.listener.name": listener,
                   "sasl.mechanism.inter.broker.protocol": mechanism,
                   f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config":
                       SCRAM.format(user, USERS.get(user) if password is None else password)})
    values.update(extra)
    return build(BrokerConfig(values))


def metadata(conn: BrokerConnection) -> dict:
    return asyncio.run(conn.request(METADATA, 1, {"topics": None}))


def run(coro):
    return asyncio.run(coro)


@pytest.mark.parametrize("listener", ["SASL_SSL", "SASL_PLAINTEXT"])
def test_scram_login_over_each_sasl_protocol(b, listener):
    async def go():
        conn = BrokerConnection("localhost", b.listeners[listener], "t", 10,
                                security_for(b, listener))
        try:
            body = await conn.request(METADATA, 1, {"topics": None})
            again = await conn.request(METADATA, 1, {"topics": None})
        finally:
            conn.close()
        return body, again, conn.connects
    body, again, connects = run(go())
    assert body["brokers"] and again["brokers"] and connects == 1


def test_mutual_tls_presents_the_brokers_key_store(b):
    """The SSL listener requires client certificates: the broker's own key store is its
    certificate, as Kafka's brokers present theirs to each other."""
    conn = BrokerConnection("localhost", b.listeners["SSL"], "t", 10, security_for(b, "SSL"))
    assert metadata(conn)["brokers"]

    async def refused():
        c = BrokerConnection("localhost", b.listeners["SSL"], "t", 10,
                             InterBrokerSecurity("SSL", "SSL", _trusting_only(b.pki)))
        try:
            await c.request(METADATA, 1, {"topics": None})
        finally:
            c.close()
    with pytest.raises((OSError, asyncio.IncompleteReadError)):     # TLS 1.3: at the first read
        run(refused())


def _trusting_only(pki: Pki) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cafile=str(pki.ca_pem))
    return ctx


def test_a_certificate_that_does_not_name_the_host_is_refused(b):
    conn = BrokerConnection("127.0.0.1", b.listeners["SASL_SSL"], "t", 10,
                            security_for(b, "SASL_SSL"))
    with pytest.raises(AuthenticationFailed, match="ssl.endpoint.identification.algorithm"):
        metadata(conn)


def test_a_wrong_password_fails_with_what_to_check_and_no_secret(b):
    conn = BrokerConnection("localhost", b.listeners["SASL_SSL"], "t", 10,
                            security_for(b, "SASL_SSL", password="not-it"))
    with pytest.raises(AuthenticationFailed) as e:
        metadata(conn)
    text = str(e.value)
    assert "refused this broker's SASL/SCRAM-SHA-512 login as 'alice'" in text
    assert "sasl.jaas.config" in text and "not-it" not in text
    assert conn.writer is None


def test_sessions_are_renewed_on_the_connection_and_reopened_once_over(b, monkeypatch):
    """KIP-368: with connections.max.reauth.ms (3 s here) the broker answers a session
    lifetime; past the re-authentication point (half of it, fixed for the test instead of
    85-95 %) the next request logs in again on the same socket; past the session's end the
    connection is opened afresh."""
    monkeypatch.setattr(bc.random, "uniform", lambda a, b: 0.5)

    async def go():
        conn = BrokerConnection("localhost", b.listeners["REAUTH"], "t", 10,
                                security_for(b, "REAUTH"))
        loop = asyncio.get_running_loop()
        try:
            await conn.request(METADATA, 1, {"topics": None})
            assert conn._session_end - loop.time() > 2.5
            await asyncio.sleep(max(0.0, conn._reauth_at - loop.time()) + 0.1)
            await conn.request(METADATA, 1, {"topics": None})
            first = (conn.connects, conn.reauthentications)
            await asyncio.sleep(max(0.0, conn._session_end - loop.time()) + 0.1)
            await conn.request(METADATA, 1, {"topics": None})
            return first, (conn.connects, conn.reauthentications)
        finally:
            conn.close()
    first, second = run(go())
    assert first == (1, 1)
    assert second == (2, 1)


# -- a connection the other side closed --------------------------------------------------------

class ClosingServer:
    """Answers Metadata v1, then closes the connection after `answers` requests on it."""

    def __init__(self, answers: int):
        self.answers = answers
        self.connections = 0

    async def handle(self, reader, writer):
        self.connections += 1
        try:
            for _ in range(self.answers):
                size = int.from_bytes(await reader.readexactly(4), "big")
                header, _ = decode_request(METADATA, await reader.readexactly(size))
                body = {"brokers": [{"node_id": 0, "host": "h", "port": 1, "rack": None}],
                        "controller_id": 0, "topics": []}
                writer.write(encode_response(METADATA, 1, header.correlation_id, body))
                await writer.drain()
        except asyncio.IncompleteReadError:
            pass
        writer.close()


@pytest.mark.parametrize("wait_for_close", [True, False])
def test_a_connection_closed_by_the_other_side_is_reopened_at_once(wait_for_close):
    """Found closed before the request (the close was seen), or the request sent on it before
    the close arrived (the answer never starts): either way the request goes out again on a
    fresh connection instead of failing (the follower then waited replica.fetch.backoff.ms)."""
    async def go():
        server = ClosingServer(answers=1)
        srv = await asyncio.start_server(server.handle, "127.0.0.1", 0)
        port = srv.sockets[0].getsockname()[1]
        conn = BrokerConnection("127.0.0.1", port, "t", 5)
        try:
            await conn.request(METADATA, 1, {"topics": None})
            if wait_for_close:
                for _ in range(100):
                    if conn.reader.at_eof():
                        break
                    await asyncio.sleep(0.01)
            body = await conn.request(METADATA, 1, {"topics": None})
            return body, conn.connects, server.connections
        finally:
            conn.close()
            srv.close()
    body, connects, accepted = run(go())
    assert body["brokers"][0]["node_id"] == 0
    assert connects == 2 and accepted == 2


def test_a_fresh_connection_closed_before_answering_is_a_failure():
    async def go():
        server = ClosingServer(answers=0)
        srv = await asyncio.start_server(server.handle, "127.0.0.1", 0)
        conn = BrokerConnection("127.0.0.1", srv.sockets[0].getsockname()[1], "t", 5)
        try:
            await conn.request(METADATA, 1, {"topics": None})
        finally:
            conn.close()
            srv.close()
        return server.connections
    with pytest.raises(ConnectionError):
        run(go())
