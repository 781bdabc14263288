"""Clients cannot write the coordinators' internal topics with Produce (a forged offset
commit, transaction state or share state), as Kafka refuses them: INVALID_TOPIC_EXCEPTION,
"Cannot append to internal topic", nothing appended; Kafka's own admin client id may."""
from __future__ import annotations

import pytest

from gregor.protocol.errors import ErrorCode
from gregor.protocol.records.builder import build_batch_bulk
from gregor.testing import Broker
from gregor.testing.wire import WireClient

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a test dependency")


def _produce(w: WireClient, topic: str, client_id: str) -> dict:
    body = {"transactional_id": None, "acks": 1, "timeout_ms": 10_000, "topic_data": [
        {"name": topic, "partition_data": [
            {"index": 0, "records": build_batch_bulk([b"k"], [b"forged"])}]}]}
    w.send("Produce", 8, body, client_id=client_id)
    _corr, r = w.receive("Produce", 8)
    return r["responses"][0]["partition_responses"][0]


def _offsets_end(broker) -> int:
    p = broker.broker.replica_manager.get("__consumer_offsets", 0)
    return p.log.log_end_offset


def test_produce_to_internal_topics_is_refused_and_appends_nothing():
    with Broker() as broker:
        c = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "g",
                         "auto.offset.reset": "earliest"})
        c.subscribe(["t"])
        c.poll(2)                                  # makes __consumer_offsets exist
        c.close()
        before = _offsets_end(broker)
        got = []
        p = ck.Producer({"bootstrap.servers": broker.bootstrap_servers,
                         "message.send.max.retries": 0})
        p.produce("__consumer_offsets", b"forged", key=b"k", partition=0,
                  on_delivery=lambda err, msg: got.append(err))
        p.flush(30)
        assert len(got) == 1 and got[0] is not None
        assert got[0].code() == ck.KafkaError.TOPIC_EXCEPTION      # code 17
        assert _offsets_end(broker) == before

        with WireClient(broker.port) as w:
            r = _produce(w, "__consumer_offsets", "mallory")
            assert r["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
            assert r["error_message"] == "Cannot append to internal topic __consumer_offsets"
            assert _offsets_end(broker) == before
            r = _produce(w, "__consumer_offsets", "__admin_client")
            assert r["error_code"] == 0 and _offsets_end(broker) == before + 1
