"""Moved to gregor.testing.wire; kept so existing imports keep working."""
from gregor.testing.wire import ConnectionClosed, WireClient  # noqa: F401
