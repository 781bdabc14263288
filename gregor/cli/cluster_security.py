"""What `gregor cluster --secure` needs, generated once into DATA_DIR/security and reused when
the same cluster starts again:

    ca.pem, ca.key           a certificate authority of this cluster (the key stays here)
    broker.pem               the brokers' key and certificate (SAN localhost, 127.0.0.1)
    secrets.json             generated passwords: the brokers' SCRAM user, the admin user,
                             the brokers' ZooKeeper login
    broker.properties        every broker's security settings (--config FILE)
    zookeeper-jaas.conf      the brokers' ZooKeeper login (a JAAS Client section)
    admin.properties         client settings for --command-config (the admin user)

Files holding a secret are written 0600. The cluster it describes: TLS on every connection
(SASL_SSL), SCRAM-SHA-512 between brokers as user `broker`, SCRAM for clients, the ACL
authorizer with `User:broker` and `User:admin` as super users, and ZooKeeper znodes created
with Kafka's secure ACLs under the brokers' digest login.
"""
from __future__ import annotations

import datetime
import ipaddress
import json
import os
import secrets
from pathlib import Path

BROKER_USER = "broker"
ADMIN_USER = "admin"
ZK_USER = "gregor"
MECHANISM = "SCRAM-SHA-512"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
DIGEST_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"
AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
CERT_DAYS = 825              # what browsers and most TLS stacks still accept for a leaf


def _write_private(path: Path, data: bytes | str) -> None:
    """Write a file only its owner may read (created so, never widened afterwards)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(raw)
    os.chmod(path, 0o600)


def _jaas(module: str, user: str, password: str) -> str:
    return f'{module} required username="{user}" password="{password}";'


def _escape_properties(value: str) -> str:
    """A value for Java's properties format (backslashes are escapes there)."""
    return value.replace("\\", "\\\\")


class SecureClusterFiles:
    def __init__(self, root: Path):
        self.dir = Path(root) / "security"
        self.ca_pem = self.dir / "ca.pem"
        self.ca_key = self.dir / "ca.key"
        self.broker_pem = self.dir / "broker.pem"
        self.secrets_path = self.dir / "secrets.json"
        self.broker_properties = self.dir / "broker.properties"
        self.zk_jaas = self.dir / "zookeeper-jaas.conf"
        self.admin_properties = self.dir / "admin.properties"
        self._secrets: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"SecureClusterFiles({self.dir})"

    @classmethod
    def create_or_load(cls, root: Path) -> "SecureClusterFiles":
        files = cls(root)
        files.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(files.dir, 0o700)
        if files.secrets_path.exists():
            files._secrets = json.loads(files.secrets_path.read_text())
        else:
            files._secrets = {name: secrets.token_urlsafe(24)
                              for name in (BROKER_USER, ADMIN_USER, "zookeeper")}
            _write_private(files.secrets_path, json.dumps(files._secrets, indent=1))
        if not (files.ca_pem.exists() and files.broker_pem.exists()):
            files._make_certificates()
        files._write_settings()
        return files

    # -- passwords ---------------------------------------------------------------------------

    def password(self, user: str) -> str:
        return self._secrets[user]

    @property
    def users(self) -> dict[str, str]:
        """The SCRAM users to create before the brokers start."""
        return {BROKER_USER: self._secrets[BROKER_USER], ADMIN_USER: self._secrets[ADMIN_USER]}

    # -- certificates --------------------------------------------------------------------------

    def _make_certificates(self) -> None:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        now = datetime.datetime.now(datetime.timezone.utc)
        start = now - datetime.timedelta(hours=1)          # clocks a little behind
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "gregor"),
                             x509.NameAttribute(NameOID.COMMON_NAME, "gregor cluster CA")])
        ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
              .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(start).not_valid_after(now + datetime.timedelta(days=3650))
              .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
              .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True,
                                           crl_sign=True, content_commitment=False,
                                           key_encipherment=False, data_encipherment=False,
                                           key_agreement=False, encipher_only=False,
                                           decipher_only=False), critical=True)
              .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                             critical=False)
              .sign(ca_key, hashes.SHA256()))
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "gregor"),
                          x509.NameAttribute(NameOID.COMMON_NAME, "gregor broker")])
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(ca_name)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(start).not_valid_after(now + datetime.timedelta(days=CERT_DAYS))
                # Brokers and clients connect to "localhost" (librdkafka checks IP SANs
                # unreliably); the IP is there for clients that connect by address.
                .add_extension(x509.SubjectAlternativeName([
                    x509.DNSName("localhost"),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                      ExtendedKeyUsageOID.CLIENT_AUTH]),
                               critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                    ca_key.public_key()), critical=False)
                .sign(ca_key, hashes.SHA256()))
        pem = serialization.Encoding.PEM
        plain = serialization.NoEncryption()
        pkcs8 = serialization.PrivateFormat.PKCS8
        _write_private(self.ca_key, ca_key.private_bytes(pem, pkcs8, plain))
        self.ca_pem.write_bytes(ca.public_bytes(pem))
        _write_private(self.broker_pem, key.private_bytes(pem, pkcs8, plain)
                       + cert.public_bytes(pem) + ca.public_bytes(pem))

    # -- settings ------------------------------------------------------------------------------

    def broker_settings(self) -> dict[str, str]:
        """Every broker's security settings, by Kafka's names."""
        broker_jaas = _jaas(SCRAM_MODULE, BROKER_USER, self._secrets[BROKER_USER])
        return {
            "listeners": "SASL_SSL://127.0.0.1:0",
            "advertised.listeners": "SASL_SSL://localhost:0",
            "security.inter.broker.protocol": "SASL_SSL",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256",
            "sasl.mechanism.inter.broker.protocol": MECHANISM,
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": broker_jaas,
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.broker_pem.resolve()),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.ca_pem.resolve()),
            "authorizer.class.name": AUTHORIZER,
            "super.users": f"User:{BROKER_USER};User:{ADMIN_USER}",
            "zookeeper.set.acl": "true",
            "gregor.zookeeper.jaas.file": str(self.zk_jaas.resolve()),
        }

    def zk_settings(self) -> dict[str, str]:
        """What a ZooKeeper client of this cluster (the brokers, `gregor users --zk-config`)
        needs to log in and create znodes as the brokers do."""
        return {"zookeeper.set.acl": "true",
                "gregor.zookeeper.jaas.file": str(self.zk_jaas.resolve())}

    def _write_settings(self) -> None:
        _write_private(self.zk_jaas, "Client {\n    " + _jaas(
            DIGEST_MODULE, ZK_USER, self._secrets["zookeeper"]) + "\n};\n")
        _write_private(self.broker_properties,
                       "# gregor cluster --secure: every broker's security settings\n"
                       + "".join(f"{k}={_escape_properties(v)}\n"
                                 for k, v in self.broker_settings().items()))
        _write_private(self.admin_properties,
                       "# gregor cluster --secure: client settings of the admin user\n"
                       + "".join(f"{k}={_escape_properties(v)}\n"
                                 for k, v in self.java_client_settings().items()))

    def java_client_settings(self, user: str = ADMIN_USER) -> dict[str, str]:
        """Kafka's (Java) client names: --command-config files, Spark's kafka.* options."""
        return {"security.protocol": "SASL_SSL", "sasl.mechanism": MECHANISM,
                "sasl.jaas.config": _jaas(SCRAM_MODULE, user, self._secrets[user]),
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(self.ca_pem.resolve())}

    def confluent_settings(self, bootstrap: str, user: str = ADMIN_USER) -> dict[str, str]:
        """librdkafka's names (confluent-kafka, kcat -X, gregor's own clients)."""
        return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL",
                "sasl.mechanisms": MECHANISM, "sasl.username": user,
                "sasl.password": self._secrets[user],
                "ssl.ca.location": str(self.ca_pem.resolve())}

    def kafka_python_settings(self, bootstrap: str, user: str = ADMIN_USER) -> dict:
        return {"bootstrap_servers": bootstrap.split(","), "security_protocol": "SASL_SSL",
                "sasl_mechanism": MECHANISM, "sasl_plain_username": user,
                "sasl_plain_password": self._secrets[user],
                "ssl_cafile": str(self.ca_pem.resolve())}


def create_users(files: SecureClusterFiles, zk_connect: str) -> None:
    """The brokers' and the admin's SCRAM credentials in ZooKeeper before any broker starts
    (as `kafka-configs --zookeeper` creates Kafka's inter-broker user), written with the
    brokers' ZooKeeper login so the znodes carry their ACLs. Existing users are kept."""
    from ..broker.cluster.zk_security import zk_security
    from ..broker.config import BrokerConfig
    from ..broker.security.credentials_zk import ZkCredentials
    from ..security.scram import MECHANISMS, credential_from_password
    store = ZkCredentials.connect(zk_connect,
                                      security=zk_security(BrokerConfig(files.zk_settings())))
    try:
        have = store.all_user_configs()
        missing = {u: p for u, p in files.users.items() if u not in have}
        if missing:
            store.write_user_configs({
                user: {name: credential_from_password(mech, password).to_text()
                       for name, mech in MECHANISMS.items()}
                for user, password in missing.items()})
    finally:
        store.close()


def describe(files: SecureClusterFiles, bootstrap: str) -> str:
    """The client settings to print once the cluster is ready (one line each, to copy)."""
    return (f"client settings of the admin user (a super user; password in {files.secrets_path}):\n"
            f"  --command-config {files.admin_properties}\n"
            f"  confluent-kafka: {json.dumps(files.confluent_settings(bootstrap))}\n"
            f"  kafka-python: {json.dumps(files.kafka_python_settings(bootstrap))}\n"
            f"  Spark: {json.dumps(spark_options(files, bootstrap))}\n")


def spark_options(files: SecureClusterFiles, bootstrap: str) -> dict[str, str]:
    """The kafka.-prefixed options of Spark's Kafka connector (and of format("gregor"))."""
    return {"kafka.bootstrap.servers": bootstrap,
            **{f"kafka.{k}": v for k, v in files.java_client_settings().items()}}
