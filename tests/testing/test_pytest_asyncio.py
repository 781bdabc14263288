"""gregor.testing's brokers in `async def` tests run by pytest-asyncio. The in-process broker
serves on its own event loop in its own thread, so a test on pytest-asyncio's loop talks to it
with aiokafka and with gregor's AsyncioProducer like to any broker: in strict mode (marked
tests, this suite's mode, here) and in auto mode (unmarked tests, in a pytest run of its own),
with a loop per test and one per module."""
from __future__ import annotations

import asyncio
import threading

import pytest

pytest.importorskip("pytest_asyncio", reason="pytest-asyncio is a test dependency")
aiokafka = pytest.importorskip("aiokafka", reason="aiokafka is a test dependency")

from gregor import AsyncioProducer  # noqa: E402

pytest_plugins = ("pytester",)



async def roundtrip(broker, topic):
    """aiokafka produces, gregor's AsyncioProducer produces, aiokafka reads both back."""
    if topic not in broker.topics():
        broker.create_topic(topic)
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"from aiokafka")
    finally:
        await producer.stop()
    async with AsyncioProducer({"bootstrap.servers": broker.bootstrap_servers}) as gp:
        await gp.send(topic, b"from gregor")
    consumer = aiokafka.AIOKafkaConsumer(topic, bootstrap_servers=broker.bootstrap_servers,
                                         auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    try:
        got = []
        while len(got) < 2:
            for records in (await consumer.getmany(timeout_ms=5000)).values():
                got += [r.value for r in records]
    finally:
        await consumer.stop()
    assert got == [b"from aiokafka", b"from gregor"]


# A user's test module in auto mode: no asyncio markers, one test with a loop of its own and
# one on the module's loop.
AUTO_MODE_MODULE = """
import pytest
from tests.testing.test_pytest_asyncio import roundtrip

async def test_fresh_broker(gregor_broker):
    await roundtrip(gregor_broker, "fresh")

@pytest.mark.asyncio(loop_scope="module")
async def test_session_broker_on_a_module_loop(gregor_broker_session, unique_topic):
    await roundtrip(gregor_broker_session, unique_topic)
"""


@pytest.mark.asyncio
async def test_aiokafka_and_asyncio_producer_in_an_async_test(gregor_broker):
    gregor_broker.create_topic("async-t", partitions=2)
    here = threading.get_ident()
    assert gregor_broker.run_on_loop(lambda _b: threading.get_ident()) != here
    assert gregor_broker.run_on_loop(lambda _b: asyncio.get_running_loop()) is not \
        asyncio.get_running_loop()
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=gregor_broker.bootstrap_servers)
    await producer.start()
    try:
        sent = await asyncio.gather(*(producer.send_and_wait("async-t", b"a%d" % i, partition=0)
                                      for i in range(10)))
    finally:
        await producer.stop()
    assert sorted(md.offset for md in sent) == list(range(10))
    async with AsyncioProducer({"bootstrap.servers": gregor_broker.bootstrap_servers}) as gp:
        md = await gp.send("async-t", b"g", partition=1)
    assert (md.partition, md.offset) == (1, 0)
    consumer = aiokafka.AIOKafkaConsumer("async-t", bootstrap_servers=gregor_broker
                                         .bootstrap_servers, auto_offset_reset="earliest",
                                         enable_auto_commit=False)
    await consumer.start()
    try:
        got = {}
        while sum(map(len, got.values())) < 11:
            for tp, records in (await consumer.getmany(timeout_ms=5000)).items():
                got.setdefault(tp.partition, []).extend(r.value for r in records)
    finally:
        await consumer.stop()
    assert got == {0: [b"a%d" % i for i in range(10)], 1: [b"g"]}


@pytest.mark.asyncio(loop_scope="module")
async def test_session_broker_on_a_module_loop(gregor_broker_session, unique_topic):
    await roundtrip(gregor_broker_session, unique_topic)


def test_unmarked_async_tests_in_auto_mode(pytester):
    pytester.makepyfile(test_user=AUTO_MODE_MODULE)
    result = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider",
                                          "-o", "asyncio_mode=auto",
                                          "-o", "asyncio_default_fixture_loop_scope=function")
    result.assert_outcomes(passed=2, warnings=0)
