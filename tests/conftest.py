"""Fixtures shared by every test suite."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))  # so `tests.support` imports whatever the rootdir layout

from tests.support.broker import BrokerProcess  # noqa: E402


@pytest.fixture
def broker(tmp_path):
    """A fresh `gregor broker` process with its own data dir, stopped after the test."""
    b = BrokerProcess(tmp_path / "broker-data")
    b.start()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture(scope="session")
def shared_broker(tmp_path_factory):
    """One broker process shared by the whole session (use distinct topic names per test)."""
    b = BrokerProcess(tmp_path_factory.mktemp("shared-broker") / "data")
    b.start()
    try:
        yield b
    finally:
        b.stop()


from tests.support.zookeeper import (three_brokers, zk_connect,  # noqa: E402,F401
                                     zookeeper_server)
