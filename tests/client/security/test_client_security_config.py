"""The clients' TLS and SASL settings: Kafka's and librdkafka's names, Java's sasl.jaas.config,
clear errors, secrets never shown; the SASL exchange against the broker's own servers."""
from __future__ import annotations

import ssl

import pytest

from gregor.broker.security.sasl.plain import PlainServer
from gregor.broker.security.sasl.scram import ScramServer
from gregor.client.config import COMMON_OPTIONS, parse_config
from gregor.client.errors import ConfigError
from gregor.client.security.sasl import SaslSettings
from gregor.client.security.secure_connection import connection_security
from gregor.client.security.tls import client_context
from gregor.security.scram import MECHANISMS, credential_from_password
from tests.support.tls import STORE_PASSWORD, Pki


def cfg(**values) -> dict:
    values.setdefault("bootstrap.servers", "localhost:9093")
    return parse_config(COMMON_OPTIONS, values)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return Pki(tmp_path_factory.mktemp("client-pki"))


def test_plaintext_needs_nothing():
    assert connection_security(cfg()) is None


@pytest.mark.parametrize("protocol", ["ssl", "SASL_SSL", "sasl_plaintext", "SSL"])
def test_protocols_case_insensitive(protocol):
    c = cfg(**{"security.protocol": protocol, "sasl.mechanism": "PLAIN",
               "sasl.username": "u", "sasl.password": "p"})
    assert c["security.protocol"] == protocol.upper()


def test_unknown_protocol():
    with pytest.raises(ConfigError, match="security.protocol"):
        cfg(**{"security.protocol": "kerberos"})


@pytest.mark.parametrize("conf", [
    {"sasl.mechanisms": "SCRAM-SHA-256", "sasl.username": "alice", "sasl.password": "pw"},
    {"sasl.mechanism": "scram-sha-256", "sasl.jaas.config":
     'org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" '
     'password="pw";'},
    {"sasl_mechanism": "SCRAM-SHA-256", "sasl_plain_username": "alice",
     "sasl_plain_password": "pw"},
])
def test_sasl_settings_in_every_spelling(conf):
    s = SaslSettings(cfg(**{"security.protocol": "SASL_PLAINTEXT", **conf}))
    assert (s.mechanism, s.username) == ("SCRAM-SHA-256", "alice")
    assert "pw" not in repr(s)


def test_sasl_errors_say_what_to_set():
    with pytest.raises(ConfigError, match="GSSAPI is Kafka's default"):
        SaslSettings(cfg(**{"security.protocol": "SASL_SSL", "sasl.username": "u",
                            "sasl.password": "p"}))
    with pytest.raises(ConfigError, match="sasl.username and sasl.password"):
        SaslSettings(cfg(**{"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}))
    with pytest.raises(ConfigError, match="sasl.jaas.config") as e:
        SaslSettings(cfg(**{"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                            "sasl.jaas.config": 'M required password="hunter2"'}))
    assert "hunter2" not in str(e.value)


def test_secret_values_never_appear_in_config_errors():
    with pytest.raises(ConfigError) as e:
        cfg(**{"sasl.password": "first-secret", "sasl_password": "second-secret"})
    assert "first-secret" not in str(e.value) and "second-secret" not in str(e.value)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_exchange_against_the_broker_servers(mechanism):
    s = SaslSettings(cfg(**{"security.protocol": "SASL_SSL", "sasl.mechanism": mechanism,
                            "sasl.username": "alice", "sasl.password": "pw"}))
    if mechanism == "PLAIN":
        server = PlainServer({"alice": "pw"}.get)
    else:
        cred = credential_from_password(MECHANISMS[mechanism], "pw")
        server = ScramServer(MECHANISMS[mechanism], lambda u, m: cred if u == "alice" else None)
    ex = s.exchange()
    token = ex.first()
    while token is not None:
        token = ex.next(server.evaluate(token))
    assert ex.done and server.complete and server.authorization_id == "alice"


def test_tls_context_defaults_verify_and_check_host_names(pki):
    ctx = client_context(cfg(**{"security.protocol": "SSL", "ssl.ca.location": str(pki.ca_pem)}))
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    for off in ("", "none", "NONE"):
        ctx = client_context(cfg(**{"security.protocol": "SSL",
                                    "ssl.ca.location": str(pki.ca_pem),
                                    "ssl.endpoint.identification.algorithm": off}))
        assert not ctx.check_hostname and ctx.verify_mode == ssl.CERT_REQUIRED
    ctx = client_context(cfg(**{"security.protocol": "SSL",
                                "enable.ssl.certificate.verification": "false"}))
    assert ctx.verify_mode == ssl.CERT_NONE


@pytest.mark.parametrize("trust", ["ca_location", "ca_pem", "truststore_pem", "truststore_p12"])
def test_trust_in_every_form(pki, trust):
    values = {
        "ca_location": {"ssl.ca.location": str(pki.ca_pem)},
        "ca_pem": {"ssl.ca.pem": pki.ca.cert_pem.bytes().decode()},
        "truststore_pem": {"ssl.truststore.type": "PEM",
                           "ssl.truststore.location": str(pki.ca_pem)},
        "truststore_p12": {"ssl.truststore.type": "PKCS12",
                           "ssl.truststore.location": str(pki.pkcs12_truststore()),
                           "ssl.truststore.password": STORE_PASSWORD},
    }[trust]
    ctx = client_context(cfg(**{"security.protocol": "SSL", **values}))
    assert len(ctx.get_ca_certs()) == 1


def test_client_certificates_in_every_form(pki):
    cert, key = pki.client("mallet")
    client_context(cfg(**{"security.protocol": "SSL", "ssl.certificate.location": str(cert),
                          "ssl.key.location": str(key)}))
    client_context(cfg(**{"security.protocol": "SSL", "ssl.certificate.pem": cert.read_text(),
                          "ssl.key.pem": key.read_text()}))
    client_context(cfg(**{"security.protocol": "SSL",                 # librdkafka: PKCS#12
                          "ssl.keystore.location": str(pki.pkcs12_keystore("c.p12")),
                          "ssl.keystore.password": STORE_PASSWORD}))
    client_context(cfg(**{"security.protocol": "SSL", "ssl.keystore.type": "PEM",
                          "ssl.keystore.key": key.read_text(),
                          "ssl.keystore.certificate.chain": cert.read_text()}))
    with pytest.raises(ConfigError, match="do not load"):
        client_context(cfg(**{"security.protocol": "SSL", "ssl.certificate.location": str(cert),
                              "ssl.key.location": str(pki.ca_pem)}))
    with pytest.raises(ConfigError) as e:
        client_context(cfg(**{"security.protocol": "SSL",
                              "ssl.keystore.location": str(pki.pkcs12_keystore("d.p12")),
                              "ssl.keystore.password": "wrong-p12-pw"}))
    assert "wrong-p12-pw" not in str(e.value)
