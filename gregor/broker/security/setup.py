"""Building the broker's security at start: the SCRAM credential store (the data directory on a
single node; ZooKeeper in a cluster) and every listener's TLS / SASL set-up."""
from __future__ import annotations

from .credentials import FileCredentialStore
from .listener_security import BrokerSecurity


def build_security(broker) -> BrokerSecurity:
    store = FileCredentialStore(broker.data_dir)
    security = BrokerSecurity(broker.config, broker.listeners, store)
    handler = broker.handlers.get(18)
    if handler is not None:
        security.api_versions_range = (handler.min_version, handler.max_version)
    return security
