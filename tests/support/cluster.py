"""Moved to gregor.testing.cluster; kept so existing imports keep working."""
from gregor.testing.cluster import (SESSION_MS, BrokerCluster, ProxiedCluster,  # noqa: F401
                                    _free_port)
