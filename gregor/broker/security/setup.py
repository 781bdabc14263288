"""Building the broker's security at start: the SCRAM credential store (the data directory on a
single node; ZooKeeper in a cluster) and every listener's TLS / SASL set-up."""
from __future__ import annotations

from .credentials import FileCredentialStore
from .listener_security import BrokerSecurity


def build_security(broker) -> BrokerSecurity:
    if broker.cluster is not None:
        from .credentials_zk import ZkCredentialStore
        store = ZkCredentialStore(broker.cluster.store.client)
        store.start()          # a few reads at start-up, before the broker serves anyone
    else:
        store = FileCredentialStore(broker.data_dir)
    security = BrokerSecurity(broker.config, broker.listeners, store)
    handler = broker.handlers.get(18)
    if handler is not None:
        security.api_versions_range = (handler.min_version, handler.max_version)
    return security
