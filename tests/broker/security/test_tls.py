"""TLS contexts of the broker's listeners (key and trust stores in PEM, inline PEM and PKCS12),
ssl.client.auth, and client certificate subjects printed as Java prints them."""
from __future__ import annotations

import datetime
import glob
import os
import ssl
import tempfile

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from gregor.broker.config import BrokerConfig, ConfigError
from gregor.broker.security.settings import ListenerSettings
from gregor.broker.security.tls import server_context, subject_dn
from tests.support.tls import STORE_PASSWORD, Pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return Pki(tmp_path_factory.mktemp("pki"))


def ctx_for(values: dict, listener="SSL", protocol="SSL") -> ssl.SSLContext:
    return server_context(ListenerSettings(BrokerConfig(values), listener), protocol)


def _temp_keys() -> set[str]:
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "gregor-key-*")))


def test_pem_keystore_file(pki):
    ctx = ctx_for({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server_pem)})
    assert ctx.verify_mode == ssl.CERT_NONE
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_2


def test_inline_pem_goes_through_a_temporary_file_that_is_removed(pki):
    before = _temp_keys()
    ctx_for({"ssl.keystore.type": "PEM", "ssl.keystore.key": pki.server_key_text(),
             "ssl.keystore.certificate.chain": pki.server_chain_text(),
             "ssl.truststore.type": "PEM",
             "ssl.truststore.certificates": pki.ca.cert_pem.bytes().decode()})
    assert _temp_keys() == before


def test_encrypted_pem_key_with_ssl_key_password(pki, tmp_path):
    key = serialization.load_pem_private_key(pki.server.private_key_pem.bytes(), None)
    encrypted = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.BestAvailableEncryption(b"key-pw-3"))
    path = tmp_path / "encrypted.pem"
    path.write_bytes(encrypted + pki.server_chain_text().encode())
    ctx_for({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(path),
             "ssl.key.password": "key-pw-3"})
    ctx_for({"ssl.keystore.type": "PEM", "ssl.keystore.key": encrypted.decode(),
             "ssl.keystore.certificate.chain": pki.server_chain_text(),
             "ssl.key.password": "key-pw-3"})
    with pytest.raises(ConfigError, match="ssl.key.password") as e:
        ctx_for({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(path),
                 "ssl.key.password": "wrong-key-pw"})
    assert "wrong-key-pw" not in str(e.value)


def test_pkcs12_keystore_and_truststore(pki):
    before = _temp_keys()
    ctx = ctx_for({"ssl.keystore.type": "PKCS12",
                   "ssl.keystore.location": str(pki.pkcs12_keystore()),
                   "ssl.keystore.password": STORE_PASSWORD,
                   "ssl.truststore.type": "PKCS12",
                   "ssl.truststore.location": str(pki.pkcs12_truststore()),
                   "ssl.truststore.password": STORE_PASSWORD,
                   "ssl.client.auth": "required"})
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    assert len(ctx.get_ca_certs()) == 1
    assert _temp_keys() == before


def test_default_jks_type_reads_a_pkcs12_file_as_java_does(pki):
    ctx_for({"ssl.keystore.location": str(pki.pkcs12_keystore("as-jks.p12")),
             "ssl.keystore.password": STORE_PASSWORD})


def test_a_real_jks_file_is_refused_with_the_conversion_command(pki, tmp_path):
    jks = tmp_path / "server.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + b"\0" * 64)
    with pytest.raises(ConfigError, match="keytool -importkeystore"):
        ctx_for({"ssl.keystore.location": str(jks), "ssl.keystore.password": "x"})


def test_wrong_pkcs12_password_names_the_setting_not_the_password(pki):
    with pytest.raises(ConfigError) as e:
        ctx_for({"ssl.keystore.type": "PKCS12",
                 "ssl.keystore.location": str(pki.pkcs12_keystore("p.p12")),
                 "ssl.keystore.password": "not-the-password-99"})
    assert "ssl.keystore.password" in str(e.value)
    assert "not-the-password-99" not in str(e.value)


def test_missing_keystore_says_what_to_set():
    with pytest.raises(ConfigError, match="ssl.keystore.location"):
        ctx_for({})


def test_enabled_protocols_and_ciphers(pki):
    base = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server_pem)}
    ctx = ctx_for({**base, "ssl.enabled.protocols": "TLSv1.3"})
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_3
    ctx_for({**base, "ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,"
                                          "TLS_AES_128_GCM_SHA256"})
    with pytest.raises(ConfigError, match="ssl.enabled.protocols"):
        ctx_for({**base, "ssl.enabled.protocols": "SSLv3"})
    with pytest.raises(ConfigError, match="ssl.cipher.suites"):
        ctx_for({**base, "ssl.cipher.suites": "NOT_A_CIPHER"})


def test_client_auth_on_sasl_ssl_counts_only_with_the_listener_prefix(pki):
    """Kafka: the unprefixed ssl.client.auth does not apply to SASL_SSL listeners."""
    base = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server_pem),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca_pem),
            "ssl.client.auth": "required"}
    assert ctx_for(base, "SASL_SSL", "SASL_SSL").verify_mode == ssl.CERT_NONE
    assert ctx_for(base, "SSL", "SSL").verify_mode == ssl.CERT_REQUIRED
    prefixed = {**base, "listener.name.sasl_ssl.ssl.client.auth": "requested"}
    assert ctx_for(prefixed, "SASL_SSL", "SASL_SSL").verify_mode == ssl.CERT_OPTIONAL


def test_listener_prefixed_keystore_wins(pki, tmp_path):
    ctx_for({"ssl.keystore.location": str(tmp_path / "missing.pem"),
             "listener.name.internal.ssl.keystore.type": "PEM",
             "listener.name.internal.ssl.keystore.location": str(pki.server_pem)},
            "INTERNAL")
    with pytest.raises(ConfigError):
        ctx_for({"ssl.keystore.type": "PEM",
                 "ssl.keystore.location": str(tmp_path / "missing.pem")}, "OTHER")


def _cert(*attributes) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(list(attributes))
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(1).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.DER)


def test_subject_dn_in_java_order_and_escaping():
    der = _cert(x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Acme, Inc."),
                x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, "Eng"),
                x509.NameAttribute(NameOID.COMMON_NAME, "alice+bob"))
    assert subject_dn(der) == r"CN=alice\+bob,OU=Eng,O=Acme\, Inc.,C=US"


def test_subject_attributes_without_a_java_keyword_print_as_oid_and_der_hex():
    der = _cert(x509.NameAttribute(NameOID.EMAIL_ADDRESS, "a@b.c"),
                x509.NameAttribute(NameOID.COMMON_NAME, "alice"))
    # Java: X500Principal("CN=alice, EMAILADDRESS=a@b.c").getName() (IA5String, tag 0x16)
    assert subject_dn(der) == "CN=alice,1.2.840.113549.1.9.1=#1605614062 2e63".replace(" ", "")
