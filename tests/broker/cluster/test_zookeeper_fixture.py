"""Without ZooKeeper the cluster tests skip on a developer machine but fail in CI."""
from __future__ import annotations

import pytest

from gregor.broker.cluster import zookeeper_server as zk
from tests.support.zookeeper import unavailable


def test_skips_locally_and_fails_in_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="needs ZooKeeper: no jar"):
        unavailable("no jar")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="ZooKeeper is required here: no jar"):
        unavailable("no jar")


def test_missing_reason_names_the_package(monkeypatch, tmp_path):
    monkeypatch.setenv("ZOOKEEPER_HOME", str(tmp_path))
    monkeypatch.setattr(zk, "JAVA_DIR", tmp_path)
    if zk.missing_reason() is not None and "java" in zk.missing_reason():
        pytest.skip("java itself is missing here")
    assert "apt-get install --no-install-recommends zookeeper" in zk.missing_reason()


def test_generated_config_allows_short_sessions(tmp_path):
    cfg = zk.write_config(tmp_path, 12345).read_text()
    assert "tickTime=500" in cfg and "minSessionTimeout=1000" in cfg
    assert "clientPort=12345" in cfg and "clientPortAddress=127.0.0.1" in cfg
    assert "admin.enableServer=false" in cfg
