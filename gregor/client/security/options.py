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

from ..config import Option

SECURITY_OPTIONS: list[Option] = [
    Option("sasl.mechanism", "GSSAPI", str,
           validate=lambda v: str(v).strip().upper()),
    Option("sasl.mechanisms", None, str, validate=lambda v: str(v).strip().upper()),
    Option("sasl.username", None, str),
    Option("sasl.password", None, str, secret=True),
    Option("sasl.jaas.config", None, str, secret=True),
    # OAUTHBEARER with an unsecured JWT (development and tests, as librdkafka's and Java's)
    Option("enable.sasl.oauthbearer.unsecure.jwt", False, bool),
    Option("sasl.oauthbearer.config", None, str),
    # kafka-python / aiokafka spellings (sasl_plain_username=...)
    Option("sasl.plain.username", None, str),
    Option("sasl.plain.password", None, str, secret=True),
    Option("ssl.ca.location", None, str),
    Option("ssl.ca.pem", None, str),
    Option("ssl.certificate.location", None, str),
    Option("ssl.certificate.pem", None, str),
    Option("ssl.key.location", None, str),
    Option("ssl.key.pem", None, str, secret=True),
    Option("ssl.key.password", None, str, secret=True),
    Option("ssl.keystore.type", None, str),
    Option("ssl.keystore.location", None, str),
    Option("ssl.keystore.password", None, str, secret=True),
    Option("ssl.keystore.key", None, str, secret=True),
    Option("ssl.keystore.certificate.chain", None, str),
    Option("ssl.truststore.type", None, str),
    Option("ssl.truststore.location", None, str),
    Option("ssl.truststore.password", None, str, secret=True),
    Option("ssl.truststore.certificates", None, str),
    Option("ssl.endpoint.identification.algorithm", "https", str),
    Option("enable.ssl.certificate.verification", True, bool),
    Option("ssl.enabled.protocols", "TLSv1.2,TLSv1.3", str),
    Option("ssl.protocol", "TLSv1.3", str),
    Option("ssl.cipher.suites", None, str),
    # kafka-python: ssl_cafile, ssl_certfile, ssl_keyfile, ssl_password, ssl_check_hostname
    Option("ssl.cafile", None, str),
    Option("ssl.certfile", None, str),
    Option("ssl.keyfile", None, str),
    Option("ssl.password", None, str, secret=True),
    Option("ssl.check.hostname", None, bool),
]
SECRET_OPTIONS = frozenset(o.name for o in SECURITY_OPTIONS if o.secret)
