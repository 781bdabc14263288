"""Moved to gregor.testing.checkers; kept so existing imports keep working."""
from gregor.testing.checkers import ReplicationChecker, _seq  # noqa: F401
