"""Fixtures for client tests that need a broker: one broker process per test module (gregor by
default; GREGOR_TEST_BROKER=tansu runs the same tests against tansu, see tests/interop)."""
from __future__ import annotations

import itertools

import pytest

from tests.interop.targets import start_target

_seq = itertools.count()


@pytest.fixture(scope="module")
def client_broker(tmp_path_factory):
    b = start_target(tmp_path_factory.mktemp("client-broker") / "data")
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture
def new_topic(client_broker, request):
    """A factory: new_topic(partitions=1) creates a uniquely named topic (with confluent-kafka's
    admin client, so these tests do not depend on gregor's own) and returns its name."""
    admin_mod = pytest.importorskip("confluent_kafka.admin")
    admin = admin_mod.AdminClient({"bootstrap.servers": client_broker.bootstrap})
    base = request.node.name.replace("[", "-").replace("]", "").replace("_", "-")[:50]

    def make(partitions: int = 1, config: dict | None = None) -> str:
        name = f"{base}-{next(_seq)}"
        fs = admin.create_topics([admin_mod.NewTopic(name, partitions, 1,
                                                     config=config or {})])
        for f in fs.values():
            f.result(30)
        return name

    return make
