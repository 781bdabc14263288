"""A private ZooKeeper for tests: Debian's package (the jar cluster mode uses, started by
gregor/broker/cluster/zookeeper_server.py) in a temporary directory, nothing in /etc or /var.

    with ZooKeeperServer() as zk:
        Cluster(brokers=3, zookeeper=zk)       # or "zookeeper.connect": f"{zk.hosts}/chroot"

Without java or ZooKeeper, start() raises ZooKeeperMissing saying what to install (the pytest
plugin turns that into a skip, or a failure when CI=true).
"""
from __future__ import annotations

import shutil
import tempfile
import uuid
from pathlib import Path


class ZooKeeperMissing(RuntimeError):
    """ZooKeeper cannot be started here; the message says what to install."""


def missing_reason() -> str | None:
    from ..broker.cluster import zookeeper_server
    return zookeeper_server.missing_reason()


class ZooKeeperServer:
    def __init__(self):
        self.dir: Path | None = None
        self.proc = None
        self.port = 0
        self._log = None

    @property
    def log_path(self) -> Path | None:
        return self.dir / "zookeeper.log" if self.dir is not None else None

    def start(self) -> "ZooKeeperServer":
        from ..broker.cluster import zookeeper_server as zk
        why = zk.missing_reason()
        if why:
            raise ZooKeeperMissing(f"ZooKeeper is needed here: {why}")
        self.dir = Path(tempfile.mkdtemp(prefix="gregor-zk-"))
        self._log = open(self.log_path, "w")
        try:
            self.proc, self.port = zk.start(self.dir, stdout=self._log)
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}"

    def chroot(self, prefix: str = "t") -> str:
        """zookeeper.connect for a fresh, empty chroot on this server."""
        return f"{self.hosts}/{prefix}-{uuid.uuid4().hex[:12]}"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except Exception:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self) -> "ZooKeeperServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
