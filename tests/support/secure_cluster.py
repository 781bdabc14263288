"""A secured cluster of broker processes, configured exactly as `gregor cluster --secure` runs
one (gregor/cli/cluster_security.py): SASL_SSL everywhere, SCRAM-SHA-512 between brokers, the
ACL authorizer with User:broker and User:admin as super users, ZooKeeper znodes under the
brokers' digest login with Kafka's secure ACLs. The users exist in ZooKeeper before the
brokers start.

    c = SecureCluster(tmp, zookeeper_server.hosts, plaintext_listener=True).start()
    Producer(c.client_config(acks="all"))      # confluent-kafka, as the admin user
    c.login(broker, "alice", "alice-secret")   # a SCRAM login by hand against one broker

plaintext_listener adds a PLAINTEXT listener INSECURE on every broker (never the inter-broker
one), for tests of what an unauthenticated client may do.
"""
from __future__ import annotations

import uuid
from pathlib import Path

from gregor.cli.cluster_security import (ADMIN_USER, MECHANISM, SecureClusterFiles,
                                         create_users)
from gregor.testing.cluster import BrokerCluster
from tests.support.sasl_wire import SecureWireClient, login

SESSION_MS = 4000


class SecureCluster(BrokerCluster):
    def __init__(self, root: Path, zk_hosts: str, size: int = 3, *,
                 session_ms: int = SESSION_MS, settings: dict | None = None,
                 plaintext_listener: bool = False):
        root = Path(root)
        self.files = SecureClusterFiles.create_or_load(root)
        base = self.files.broker_settings()
        if plaintext_listener:
            base.update({
                "listeners": "SASL_SSL://127.0.0.1:0,INSECURE://127.0.0.1:0",
                "advertised.listeners": "SASL_SSL://localhost:0,INSECURE://127.0.0.1:0",
                "listener.security.protocol.map": "SASL_SSL:SASL_SSL,INSECURE:PLAINTEXT"})
        base.update({"replica.lag.time.max.ms": 2 * session_ms,
                     "group.initial.rebalance.delay.ms": 0})
        base.update(settings or {})
        super().__init__(root, f"{zk_hosts}/s-{uuid.uuid4().hex[:12]}", size,
                         session_ms=session_ms, settings=base)

    def start(self) -> "SecureCluster":
        create_users(self.files, self.connect)
        super().start()
        self.wait_for(lambda: len(self.registered()) == len(self.brokers)
                      and self.controller_id() != -1,
                      what=f"{len(self.brokers)} registered brokers and a controller")
        return self

    # -- clients ---------------------------------------------------------------------------

    def address(self, b) -> str:
        return f"localhost:{b.port}"            # the name in the brokers' certificate

    @property
    def bootstrap(self) -> str:
        return ",".join(self.address(b) for b in self.brokers if b.running)

    def client_config(self, user: str = ADMIN_USER, password: str | None = None,
                      **extra) -> dict:
        """confluent-kafka's settings (gregor's clients take them too)."""
        cfg = self.files.confluent_settings(self.bootstrap, user)
        if password is not None:
            cfg["sasl.password"] = password
        cfg.update({k.replace("_", "."): v for k, v in extra.items()})
        return cfg

    def tls(self):
        import ssl
        return ssl.create_default_context(cafile=str(self.files.ca_pem))

    def wire(self, b, listener: str = "SASL_SSL") -> SecureWireClient:
        """A raw connection to broker b: TLS on SASL_SSL, plain on INSECURE."""
        if listener == "SASL_SSL":
            return SecureWireClient(b.port, self.tls())
        return SecureWireClient(b.listeners[listener], None)

    def login(self, b, user: str, password: str, mechanism: str = MECHANISM):
        """A SASL_SSL connection to b logged in as user (None if the login was refused)."""
        c = self.wire(b)
        answer = login(c, mechanism, user, password)
        if answer["error_code"]:
            c.close()
            return None
        return c

    def can_login(self, b, user: str, password: str, mechanism: str = MECHANISM) -> bool:
        c = self.login(b, user, password, mechanism)
        if c is None:
            return False
        c.close()
        return True
