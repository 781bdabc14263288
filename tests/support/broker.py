"""Moved to gregor.testing.process; kept so existing imports keep working."""
from gregor.testing.process import READY, REPO_ROOT, BrokerProcess  # noqa: F401
