"""Errors of a cluster member, shared by its parts."""
from __future__ import annotations


class ClusterError(RuntimeError):
    """The broker cannot join (refused id, foreign data directory, ZooKeeper unreachable)."""
