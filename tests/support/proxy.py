"""Moved to gregor.testing.proxy; kept so existing imports keep working."""
from gregor.testing.proxy import TcpProxy, _close  # noqa: F401
