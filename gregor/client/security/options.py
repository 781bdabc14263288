"""The clients' security settings, under librdkafka's names and Java's (what Spark passes from
kafka.-prefixed options), so a confluent-kafka or a Java client configuration works as it is.

    security.protocol          PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL
    sasl.mechanism(s)          PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512 | OAUTHBEARER (unsecured JWT:
                               enable.sasl.oauthbearer.unsecure.jwt=true with
                               sasl.oauthbearer.config="principal=alice [lifeSeconds=3600]
                               [scope=a,b]", or Java's OAuthBearerLoginModule JAAS options)
    sasl.username / sasl.password, or Java's sasl.jaas.config (ScramLoginModule /
                               PlainLoginModule with username="..." password="...")
    ssl.ca.location / ssl.ca.pem, or ssl.truststore.type/location/password/certificates
    ssl.certificate.location + ssl.key.location (+ ssl.key.password), ssl.certificate.pem +
        ssl.key.pem, or ssl.keystore.type/location/password (PKCS12) / key / certificate.chain
    ssl.endpoint.identification.algorithm   https (default: the broker's certificate must name
                               the host connected to) | empty or none (off)
    enable.ssl.certificate.verification     true (default) | false (trust any certificate)

Passwords and keys are marked secret: no error message and no repr shows them.
"""
from __future__ import annotations


def _option(name, default, type_, secret=False, validate=None) -> dict:
    """Keyword arguments of a client config Option (config.py builds them: this module stays
    free of imports so config.py can include it)."""
    return {"name": name, "default": default, "type": type_, "secret": secret,
            "validate": validate}


SECURITY_OPTIONS: list[dict] = [
    _option("sasl.mechanism", "GSSAPI", str,
           validate=lambda v: str(v).strip().upper()),
    _option("sasl.mechanisms", None, str, validate=lambda v: str(v).strip().upper()),
    _option("sasl.username", None, str),
    _option("sasl.password", None, str, secret=True),
    _option("sasl.jaas.config", None, str, secret=True),
    # OAUTHBEARER with an unsecured JWT (development and tests, as librdkafka's and Java's)
    _option("enable.sasl.oauthbearer.unsecure.jwt", False, bool),
    _option("sasl.oauthbearer.config", None, str),
    # kafka-python / aiokafka spellings (sasl_plain_username=...)
    _option("sasl.plain.username", None, str),
    _option("sasl.plain.password", None, str, secret=True),
    _option("ssl.ca.location", None, str),
    _option("ssl.ca.pem", None, str),
    _option("ssl.certificate.location", None, str),
    _option("ssl.certificate.pem", None, str),
    _option("ssl.key.location", None, str),
    _option("ssl.key.pem", None, str, secret=True),
    _option("ssl.key.password", None, str, secret=True),
    _option("ssl.keystore.type", None, str),
    _option("ssl.keystore.location", None, str),
    _option("ssl.keystore.password", None, str, secret=True),
    _option("ssl.keystore.key", None, str, secret=True),
    _option("ssl.keystore.certificate.chain", None, str),
    _option("ssl.truststore.type", None, str),
    _option("ssl.truststore.location", None, str),
    _option("ssl.truststore.password", None, str, secret=True),
    _option("ssl.truststore.certificates", None, str),
    _option("ssl.endpoint.identification.algorithm", "https", str),
    _option("enable.ssl.certificate.verification", True, bool),
    _option("ssl.enabled.protocols", "TLSv1.2,TLSv1.3", str),
    _option("ssl.protocol", "TLSv1.3", str),
    _option("ssl.cipher.suites", None, str),
    # kafka-python: ssl_cafile, ssl_certfile, ssl_keyfile, ssl_password, ssl_check_hostname
    _option("ssl.cafile", None, str),
    _option("ssl.certfile", None, str),
    _option("ssl.keyfile", None, str),
    _option("ssl.password", None, str, secret=True),
    _option("ssl.check.hostname", None, bool),
]
SECRET_OPTIONS = frozenset(o["name"] for o in SECURITY_OPTIONS if o["secret"])
