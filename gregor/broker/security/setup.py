"""Building the broker's security at start: the SCRAM credentials (the SCRAM view of the
entity config store quotas share: the data directory on a single node, ZooKeeper in a
cluster) and every listener's TLS / SASL set-up."""
from __future__ import annotations

from .credentials import ScramCredentials, migrate_legacy_file
from .listener_security import BrokerSecurity


def build_security(broker) -> BrokerSecurity:
    if broker.cluster is None:
        migrate_legacy_file(broker.data_dir, broker.entity_configs)
    security = BrokerSecurity(broker.config, broker.listeners,
                              ScramCredentials(broker.entity_configs))
    handler = broker.handlers.get(18)
    if handler is not None:
        security.api_versions_range = (handler.min_version, handler.max_version)
    return security
