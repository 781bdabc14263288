"""gregor's pytest plugin, registered through the `pytest11` entry point when gregor is
installed (nothing to configure).

Fixtures:
- gregor_broker: an in-process Broker, fresh for each test;
- gregor_broker_session: one in-process Broker for the whole session (faults cleared after
  each test), with `unique_topic` giving each test a topic of its own;
- gregor_broker_process: a BrokerProcess (kill -9, pause, restart), fresh for each test;
- gregor_cluster: a Cluster of broker processes on ZooKeeper, fresh for each test (ZooKeeper
  is shared by the session; each cluster gets a chroot of its own);
- gregor_proxy: a TcpProxy in front of a fresh in-process broker that advertises it
  (`gregor_proxy.broker`, `gregor_proxy.bootstrap_servers`);
- gregor_zookeeper: the session's ZooKeeperServer.

The marker `@pytest.mark.gregor_config({"num.partitions": 3}, clock="manual", brokers=3)`
sets broker settings (Kafka's names), the manual clock and a cluster's size for the fixtures
of that test.

Without ZooKeeper the cluster fixtures skip with what to install; under CI=true they fail
instead when the ini option gregor_require_zookeeper is true (gregor's own suite sets it).
This module imports nothing of the broker until a fixture is used: a test run that uses none
of them pays for this file alone.
"""
from __future__ import annotations

import itertools
import os
import re

import pytest

_topics = itertools.count()


def pytest_addoption(parser) -> None:
    parser.addini("gregor_require_zookeeper", type="bool", default=False,
                  help="gregor: fail (instead of skip) the ZooKeeper fixtures when ZooKeeper "
                       "is missing and CI=true")


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", "gregor_config(settings=None, *, clock=None, brokers=None): broker settings "
                   "(Kafka's names), clock='manual' and a cluster's size for gregor's fixtures")


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def zookeeper_unavailable(why: str, required: bool | None = None):
    """Skip the test because ZooKeeper is missing, or fail it where it is required (CI)."""
    if required is None:
        required = _in_ci()
    if required:
        pytest.fail(f"ZooKeeper is required here: {why}", pytrace=False)
    pytest.skip(f"needs ZooKeeper: {why}")


def _options(request) -> tuple[dict, dict]:
    """(settings, keyword options) of the test's gregor_config markers (closest wins)."""
    settings: dict = {}
    options: dict = {}
    for marker in reversed(list(request.node.iter_markers("gregor_config"))):
        if len(marker.args) > 1 or (marker.args and not isinstance(marker.args[0], dict)):
            raise pytest.UsageError("gregor_config takes one dict of broker settings, e.g. "
                                    "@pytest.mark.gregor_config({'num.partitions': 3})")
        unknown = set(marker.kwargs) - {"clock", "brokers"}
        if unknown:
            raise pytest.UsageError(f"gregor_config: unknown option(s) {sorted(unknown)}; it "
                                    "takes clock= and brokers=")
        if marker.args:
            settings.update(marker.args[0])
        options.update(marker.kwargs)
    return settings, options


@pytest.fixture
def gregor_broker(request):
    """An in-process gregor broker for this test alone (data in a temporary directory)."""
    from .inprocess import Broker
    settings, options = _options(request)
    with Broker(settings, clock=options.get("clock")) as broker:
        yield broker


@pytest.fixture(scope="session")
def gregor_broker_session():
    """One in-process broker for the whole session; give each test its own topic
    (unique_topic) since the data stays."""
    from .inprocess import Broker
    with Broker() as broker:
        yield broker


@pytest.fixture
def gregor_schema_registry(request):
    """An in-process broker serving the Schema Registry in its process too, for this test
    alone: `.schema_registry_url` for the registry's clients, `.bootstrap_servers` as usual."""
    from .inprocess import Broker
    settings, options = _options(request)
    with Broker(settings, clock=options.get("clock"), schema_registry=True) as broker:
        yield broker


@pytest.fixture
def unique_topic(gregor_broker_session, request) -> str:
    """A topic of its own on the session broker, named after the test (1 partition; make more
    with gregor_broker_session.create_topic)."""
    base = re.sub(r"[^a-zA-Z0-9._-]", "-", request.node.name)[:150]
    return gregor_broker_session.create_topic(f"{base}-{next(_topics)}")


def pytest_runtest_teardown(item) -> None:
    # the session broker outlives the test: its faults, gates and limits must not
    if "gregor_broker_session" in getattr(item, "fixturenames", ()):
        broker = item.funcargs.get("gregor_broker_session") if hasattr(item, "funcargs") \
            else None
        if broker is not None and broker.running:
            broker.faults.clear()


@pytest.fixture
def gregor_broker_process(request):
    """A gregor broker process for this test (kill(), pause(), restart(), faults)."""
    from .process import BrokerProcess
    settings, options = _options(request)
    if options.get("clock") is not None:
        raise pytest.UsageError("gregor_config(clock=...) drives an in-process broker "
                                "(gregor_broker, gregor_proxy), not a broker process")
    with BrokerProcess(config=settings) as broker:
        yield broker


@pytest.fixture(scope="session")
def gregor_zookeeper(request):
    """A private ZooKeeper for the session (Debian's package)."""
    from .zookeeper import ZooKeeperServer, missing_reason
    why = missing_reason()
    if why:
        zookeeper_unavailable(why, _in_ci() and request.config.getini("gregor_require_zookeeper"))
    with ZooKeeperServer() as zk:
        yield zk


@pytest.fixture
def gregor_cluster(request, gregor_zookeeper):
    """A cluster of gregor broker processes (3 unless gregor_config(brokers=N)) on a chroot of
    the session's ZooKeeper, fresh for this test."""
    from .cluster import Cluster
    settings, options = _options(request)
    if options.get("clock") is not None:
        raise pytest.UsageError("gregor_config(clock=...) drives an in-process broker "
                                "(gregor_broker, gregor_proxy), not a cluster's processes")
    cluster = Cluster(options.get("brokers", 3), settings, zookeeper=gregor_zookeeper)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def gregor_proxy(request):
    """A TcpProxy in front of a fresh in-process broker that advertises the proxy, so every
    client connection goes through it: blackhole(), cut(), delay(s), heal()."""
    from .inprocess import Broker
    settings, options = _options(request)
    with Broker(settings, clock=options.get("clock"), proxy=True) as broker:
        yield broker.proxy
