"""Fixtures for the console tests: one gregor broker process (with its metrics endpoint) for the
whole console suite, the console app in-process (Starlette's TestClient) or served by uvicorn
on a free port (SSE and browser tests), and helpers to fill topics and groups."""
from __future__ import annotations

import itertools
import os
import socket
import threading
import time
import warnings

import pytest

if os.environ.get("CI") != "true":   # under CI the extra must be there: a missing one fails
    pytest.importorskip("starlette", reason="the console extra is not installed "
                                            "(pip install -e '.[console]')")

from gregor import AdminClient, Consumer, Producer  # noqa: E402
from gregor.console import ConsoleSettings  # noqa: E402
from gregor.console.app import create_app  # noqa: E402
from tests.support.broker import BrokerProcess  # noqa: E402

_seq = itertools.count()


def free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as s:
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def console_broker(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("console-broker") / "data",
                      metrics_port=free_port(),
                      settings={"group.initial.rebalance.delay.ms": 0,
                                "group.consumer.heartbeat.interval.ms": 500})
    b.start()
    try:
        yield b
    finally:
        b.stop()


def settings_for(broker, **kw) -> ConsoleSettings:
    kw.setdefault("lag_interval_s", 0.5)
    kw.setdefault("request_timeout_s", 5.0)
    return ConsoleSettings(bootstrap=broker.bootstrap, **kw)


@pytest.fixture(scope="module")
def client(console_broker):
    with warnings.catch_warnings():
        # Starlette 1.x suggests its httpx fork for the TestClient; httpx still works.
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    app = create_app(settings_for(console_broker))     # sizes from DescribeLogDirs
    with TestClient(app) as c:
        c.get("/")            # the CSRF cookie
        yield c


def csrf(c) -> str:
    return c.cookies.get("gregor_console_csrf")


def unique(prefix: str) -> str:
    return f"{prefix}-{next(_seq)}-{int(time.time() * 1000) % 100000}"


@pytest.fixture
def topic_factory(console_broker):
    admin = AdminClient({"bootstrap.servers": console_broker.bootstrap})

    def make(partitions: int = 1, records=(), prefix: str = "t") -> str:
        name = unique(prefix)
        admin.create_topics([name], num_partitions=partitions)
        if records:
            produce(console_broker, name, records)
        return name
    yield make
    admin.close()


def produce(broker, topic: str, records) -> None:
    """records: values, or (key, value[, headers[, partition]]) tuples."""
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    try:
        futs = []
        for r in records:
            if isinstance(r, tuple):
                key, value, *rest = r
                headers = rest[0] if rest else None
                partition = rest[1] if len(rest) > 1 else None
            else:
                key, value, headers, partition = None, r, None, None
            futs.append(p.send(topic, value=value, key=key, headers=headers,
                               partition=partition))
        p.flush()
        for f in futs:
            f.get(10)
    finally:
        p.close()


def commit_group(broker, group: str, topic: str, offsets: dict) -> None:
    """Commit {partition: offset} for group (standalone commit, no member left behind)."""
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                  "enable.auto.commit": False})
    try:
        c.assign([(topic, p) for p in offsets])
        c.commit(offsets=[(topic, p, o) for p, o in offsets.items()])
    finally:
        c.close()


def wait_for(predicate, timeout: float = 20.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class LiveConsole:
    """The console app served by uvicorn on a free loopback port, in a thread."""

    def __init__(self, settings: ConsoleSettings):
        import uvicorn

        self.app = create_app(settings)
        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=self.port,
                                                    log_level="warning", lifespan="on",
                                                    timeout_graceful_shutdown=1))
        self.thread = threading.Thread(target=self.server.run, daemon=True,
                                       name="console-uvicorn")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "LiveConsole":
        self.thread.start()
        wait_for(lambda: self.server.started, what="uvicorn to start")
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(10)
