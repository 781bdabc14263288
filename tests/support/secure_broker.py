"""A broker process with every security protocol, for the security tests:

    PLAINTEXT, SSL (client certificates requested), SASL_PLAINTEXT and SASL_SSL (PLAIN,
    SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER with unsecured tokens), all advertised as `localhost` (librdkafka checks host names,
    and IP SANs unreliably).

Users exist before the broker starts, as `gregor users add --data-dir` creates them.
"""
from __future__ import annotations

from pathlib import Path

from gregor.broker.security.credentials import FileCredentialStore
from gregor.security.scram import MECHANISMS, credential_from_password
from tests.support.broker import BrokerProcess
from tests.support.tls import Pki

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
PLAIN_JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
              + " ".join(f'user_{u}="{p}"' for u, p in USERS.items()) + ";")
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def add_users(data_dir: Path, users: dict[str, str]) -> None:
    FileCredentialStore(data_dir).write_user_configs({
        user: {m: credential_from_password(mech, pw).to_text() for m, mech in MECHANISMS.items()}
        for user, pw in users.items()})


def secure_settings(pki: Pki, **extra) -> dict:
    names = list(PROTOCOLS) + list(extra.pop("extra_listeners", []))
    settings = {
        "listeners": ",".join(f"{n}://127.0.0.1:0" for n in names),
        "advertised.listeners": ",".join(f"{n}://localhost:0" for n in names),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.server_pem),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca_pem),
        "ssl.client.auth": "requested",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        "connection.failed.authentication.delay.ms": "100",
        "group.initial.rebalance.delay.ms": "0",
    }
    settings.update(extra)
    return settings


def start_secure_broker(root: Path, pki: Pki | None = None, users: dict | None = None,
                        extra_args=(), metrics_port: int | None = None,
                        **extra) -> BrokerProcess:
    root = Path(root)
    pki = pki or Pki(root / "pki")
    data = root / "data"
    data.mkdir(parents=True, exist_ok=True)
    add_users(data, USERS if users is None else users)
    b = BrokerProcess(data, settings=secure_settings(pki, **extra), extra_args=list(extra_args),
                      metrics_port=metrics_port)
    b.pki = pki
    b.start()
    return b
