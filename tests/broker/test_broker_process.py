"""A real `gregor broker` process, spoken to with raw protocol frames and kafka-python."""
import socket
import time
import urllib.request

import pytest

from gregor.protocol.errors import ErrorCode
from tests.support.broker import REPO_ROOT, BrokerProcess
from tests.support.wire import WireClient

from .handler_harness import batch, fetch_body, fresp, presp, produce_body, values_of


def _create(c, name, partitions=1, configs=None):
    r = c.request("CreateTopics", 4, {"topics": [{
        "name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
        "configs": [{"name": k, "value": str(v)} for k, v in (configs or {}).items()]}],
        "timeout_ms": 5000, "validate_only": False})
    assert r["topics"][0]["error_code"] == 0, r


def _fetch_all(c, topic, partition=0, expect=1):
    """Values from offset 0; acks=1 data becomes visible once the group commit ran, so
    long-poll (bounded) until at least `expect` records are there."""
    for _ in range(100):
        f = fresp(c.request("Fetch", 11, fetch_body(topic, 0, partition=partition,
                                                    max_wait_ms=500)))
        assert f["error_code"] == 0, f
        values = values_of(f["records"])
        if len(values) >= expect:
            break
        time.sleep(0.05)
    return values


def test_acks0_success_keeps_the_connection_and_errors_close_it(shared_broker):
    with WireClient(shared_broker.port) as c:
        _create(c, "acks0")
        c.send("Produce", 8, produce_body("acks0", batch(b"fire"), acks=0))
        # no response to the acks=0 request: the next response is the metadata one
        corr = c.send("Metadata", 1, {"topics": [{"name": "acks0"}]})
        assert c.receive("Metadata", 1)[0] == corr
        c.send("Produce", 8, produce_body("acks0", batch(b"lost"), acks=0, partition=42))
        assert c.is_closed()
    with WireClient(shared_broker.port) as c:
        assert _fetch_all(c, "acks0") == [b"fire"]


def test_produce_errors_over_the_wire(shared_broker):
    with WireClient(shared_broker.port) as c:
        _create(c, "wire-errors", configs={"max.message.bytes": 1000})
        r = presp(c.request("Produce", 8, produce_body("wire-errors", batch(b"a"), acks=5)))
        assert r["error_code"] == ErrorCode.INVALID_REQUIRED_ACKS
        r = presp(c.request("Produce", 8, produce_body("wire-errors", batch(b"a" * 2000))))
        assert r["error_code"] == ErrorCode.MESSAGE_TOO_LARGE
        bad = bytearray(batch(b"a"))
        bad[30] ^= 1
        r = presp(c.request("Produce", 8, produce_body("wire-errors", bytes(bad))))
        assert r["error_code"] == ErrorCode.CORRUPT_MESSAGE
        r = presp(c.request("Produce", 8, produce_body("wire-errors", batch(b"ok"), acks=-1)))
        assert r["error_code"] == 0


def test_not_enough_replicas_over_the_wire(shared_broker):
    with WireClient(shared_broker.port) as c:
        _create(c, "wire-isr", configs={"min.insync.replicas": 2})
        r = presp(c.request("Produce", 8, produce_body("wire-isr", batch(b"a"), acks=-1)))
        assert r["error_code"] == ErrorCode.NOT_ENOUGH_REPLICAS


def test_hostile_frames_close_only_their_connection(shared_broker):
    for junk in (b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", b"\x00\x00\x00\x08" + b"\xff" * 8,
                 b"\xff\xff\xff\xff"):
        with WireClient(shared_broker.port) as c:
            c.send_raw(junk)
            assert c.is_closed()
    with WireClient(shared_broker.port) as c:
        assert c.request("ApiVersions", 0, {})["error_code"] == 0
    assert "looks like an HTTP request" in shared_broker.output()


def test_old_client_produce_v0_v2_with_legacy_message_sets(shared_broker):
    from gregor.protocol.records import legacy
    with WireClient(shared_broker.port) as c:
        _create(c, "legacy")
        for version, magic in ((0, 0), (2, 1)):
            msgs = legacy.encode_message_set(
                [legacy.LegacyMessage(offset=i, timestamp=1_700_000_000_000 if magic else -1,
                                      key=b"k", value=b"m%d-%d" % (magic, i), magic=magic)
                 for i in range(2)], magic, 0)
            r = presp(c.request("Produce", version, produce_body("legacy", msgs)))
            assert r["error_code"] == 0, r
        assert _fetch_all(c, "legacy", expect=4) == [b"m0-0", b"m0-1", b"m1-0", b"m1-1"]


def test_graceful_shutdown_answers_in_flight_requests_and_restart_keeps_data(broker):
    with WireClient(broker.port) as c:
        _create(c, "durable", 2)
        for i in range(5):
            r = presp(c.request("Produce", 8, produce_body("durable", batch(b"v%d" % i),
                                                           partition=i % 2, acks=-1)))
            assert r["error_code"] == 0
        # a long poll is waiting when SIGTERM arrives: it gets its (empty) answer
        corr = c.send("Fetch", 11, fetch_body("durable", 3, partition=0, max_wait_ms=30_000))
        time.sleep(0.2)
        assert broker.stop() == 0
        got, body = c.receive("Fetch", 11)
        assert got == corr and fresp(body)["records"] == b""
    assert "shutdown complete" in broker.output()
    broker.start()
    with WireClient(broker.port) as c:
        assert _fetch_all(c, "durable", 0, expect=3) == [b"v0", b"v2", b"v4"]
        assert _fetch_all(c, "durable", 1, expect=2) == [b"v1", b"v3"]


def test_acknowledged_records_survive_kill_9(broker):
    with WireClient(broker.port) as c:
        _create(c, "crash")
        for i in range(20):
            acks = (1, -1)[i % 2]
            r = presp(c.request("Produce", 8, produce_body("crash", batch(b"r%d" % i),
                                                           acks=acks)))
            assert r["error_code"] == 0 and r["base_offset"] == i
    broker.kill()
    broker.start()
    with WireClient(broker.port) as c:
        assert _fetch_all(c, "crash", expect=20) == [b"r%d" % i for i in range(20)]
        r = presp(c.request("Produce", 8, produce_body("crash", batch(b"after"))))
        assert r["base_offset"] == 20


def test_sigint_stops_cleanly(tmp_path):
    b = BrokerProcess(tmp_path / "data").start()
    try:
        assert b.interrupt() == 0
    finally:
        b.kill()


def test_metrics_endpoint(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    b = BrokerProcess(tmp_path / "data", metrics_port=port).start()
    try:
        with WireClient(b.port) as c:
            _create(c, "metered")
            presp(c.request("Produce", 8, produce_body("metered", batch(b"x"))))
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        assert 'gregor_broker_requests_total{api="Produce"} 1.0' in text
        assert "gregor_broker_request_latency_seconds_bucket" in text
        assert 'gregor_partition_log_end_offset{partition="0",topic="metered"} 1.0' in text
        assert 'gregor_broker_purgatory_size{purgatory="fetch"}' in text
        assert "gregor_broker_bytes_in_total" in text
    finally:
        b.stop()


@pytest.mark.interop
def test_kafka_python_round_trip(shared_broker):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    producer = KafkaProducer(bootstrap_servers=shared_broker.bootstrap, acks="all",
                             compression_type="gzip")
    try:
        futures = [producer.send("kp-roundtrip", key=b"k%d" % i, value=b"v%d" % i,
                                 headers=[("n", b"%d" % i)]) for i in range(500)]
        producer.flush(30)
        offsets = [f.get(timeout=30).offset for f in futures]
        assert offsets == list(range(500))
    finally:
        producer.close()
    consumer = KafkaConsumer(bootstrap_servers=shared_broker.bootstrap, group_id=None,
                             enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition("kp-roundtrip", 0)])
        got = []
        for _ in range(60):           # bounded: at most 60 polls of 1 s
            for recs in consumer.poll(1000).values():
                got += recs
            if len(got) >= 500:
                break
        assert [(r.offset, r.key, r.value, r.headers) for r in got] == \
            [(i, b"k%d" % i, b"v%d" % i, [("n", b"%d" % i)]) for i in range(500)]
    finally:
        consumer.close()


def test_config_file_and_set_overrides(tmp_path):
    props = tmp_path / "server.properties"
    props.write_text("# gregor test\nnum.partitions=3\nauto.create.topics.enable=true\n"
                     "message.max.bytes=2000\n")
    b = BrokerProcess(tmp_path / "data", settings={"num.partitions": "2"},
                      extra_args=["--config", str(props)])
    b.start()
    try:
        with WireClient(b.port) as c:
            m = c.request("Metadata", 4, {"topics": [{"name": "auto-cfg"}],
                                          "allow_auto_topic_creation": True})
            assert len(m["topics"][0]["partitions"]) == 2      # --set beats the file
            r = presp(c.request("Produce", 8, produce_body("auto-cfg", batch(b"x" * 3000))))
            assert r["error_code"] == ErrorCode.MESSAGE_TOO_LARGE   # from the file
    finally:
        b.stop()


def test_bad_settings_are_refused_at_start(tmp_path):
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "gregor", "broker", "--listen", "127.0.0.1:0",
                        "--data-dir", str(tmp_path / "d"), "--set", "num.partitions=many"],
                       capture_output=True, text=True, timeout=60, cwd=str(REPO_ROOT))
    assert r.returncode == 2
    assert "num.partitions" in r.stderr and "ready" not in r.stdout


def test_idempotent_sequence_checks_over_the_wire_and_across_a_kill(broker):
    with WireClient(broker.port) as c:
        _create(c, "idem")
        r = c.request("InitProducerId", 1, {"transactional_id": None,
                                             "transaction_timeout_ms": 60000})
        pid = r["producer_id"]
        first = batch(b"a", b"b", producer_id=pid, producer_epoch=0, base_sequence=0)
        assert presp(c.request("Produce", 8, produce_body("idem", first, acks=-1)))[
            "base_offset"] == 0
        gap = batch(b"x", producer_id=pid, producer_epoch=0, base_sequence=7)
        r = presp(c.request("Produce", 8, produce_body("idem", gap, acks=-1)))
        assert r["error_code"] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    broker.kill()
    broker.start()
    with WireClient(broker.port) as c:
        r = presp(c.request("Produce", 8, produce_body("idem", first, acks=-1)))  # late retry
        assert (r["error_code"], r["base_offset"]) == (0, 0)
        nxt = batch(b"c", producer_id=pid, producer_epoch=0, base_sequence=2)
        assert presp(c.request("Produce", 8, produce_body("idem", nxt, acks=-1)))[
            "base_offset"] == 2
        assert _fetch_all(c, "idem", expect=3) == [b"a", b"b", b"c"]
        r = c.request("InitProducerId", 1, {"transactional_id": None,
                                             "transaction_timeout_ms": 60000})
        assert r["producer_id"] > pid            # ids stay unique across the crash
