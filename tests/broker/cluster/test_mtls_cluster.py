"""Brokers that authenticate each other with TLS client certificates only (an SSL
inter-broker listener with ssl.client.auth=required): each broker presents its key store, its
principal is the certificate's mapped DN, and that principal in super.users is what lets the
followers fetch and the controller send LeaderAndIsr with the authorizer on."""
from __future__ import annotations

import uuid

import pytest

from gregor.cli.cluster_security import SecureClusterFiles
from gregor.testing.cluster import BrokerCluster

pytestmark = pytest.mark.timeout(180)


def test_replication_between_brokers_known_by_their_certificates(zookeeper_server, tmp_path):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    files = SecureClusterFiles.create_or_load(tmp_path)
    settings = {
        "listeners": "SSL://127.0.0.1:0", "advertised.listeners": "SSL://localhost:0",
        "security.inter.broker.protocol": "SSL",
        "listener.name.ssl.ssl.client.auth": "required",
        "ssl.principal.mapping.rules": "RULE:^CN=([^,]+),.*$/$1/,DEFAULT",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(files.broker_pem),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(files.ca_pem),
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:gregor broker"}
    c = BrokerCluster(tmp_path, f"{zookeeper_server.hosts}/m-{uuid.uuid4().hex[:12]}", 2,
                      session_ms=4000, settings=settings).start()
    try:
        c.wait_for(lambda: len(c.registered()) == 2 and c.controller_id() != -1,
                   what="2 brokers and a controller")
        client = {"bootstrap.servers": ",".join(f"localhost:{b.port}" for b in c.brokers),
                  "security.protocol": "SSL", "ssl.ca.location": str(files.ca_pem),
                  "ssl.certificate.location": str(files.broker_pem),
                  "ssl.key.location": str(files.broker_pem)}
        admin = AdminClient(client)
        admin.create_topics([NewTopic("mtls", 1, 2, config={"min.insync.replicas": "2"})]
                            )["mtls"].result(60)
        c.wait_for(lambda: len(c.json("/brokers/topics/mtls/partitions/0/state")["isr"]) == 2,
                   what="both replicas in the ISR")
        p = Producer({**client, "acks": "all"})
        for i in range(200):
            p.produce("mtls", b"%d" % i)
        assert p.flush(60) == 0
        for b in c.brokers:         # the authorizer's audit line of a denial
            assert "is Denied operation" not in b.output()
    finally:
        c.stop()
