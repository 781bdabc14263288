"""Clients speaking old protocol versions (kafka-python pinned to an old api_version): Produce
v0-v2 with magic 0/1 message sets, Fetch v0-v3 down-converted, Metadata v0-v1, ListOffsets v0."""
import pytest

pytestmark = pytest.mark.interop

kafka = pytest.importorskip("kafka", reason="kafka-python is a test dependency")


@pytest.mark.parametrize("version", [(0, 8, 2), (0, 9), (0, 10, 1)])
def test_old_kafka_python_round_trip(gregor_broker_session, version):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    topic = "old-" + "-".join(map(str, version))
    p = KafkaProducer(bootstrap_servers=gregor_broker_session.bootstrap, api_version=version, acks=1)
    try:
        futures = [p.send(topic, key=b"k%d" % i, value=b"v%d" % i) for i in range(20)]
        p.flush(30)
        assert [f.get(30).offset for f in futures] == list(range(20))
    finally:
        p.close()
    c = KafkaConsumer(bootstrap_servers=gregor_broker_session.bootstrap, api_version=version,
                      group_id=None, auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        c.assign([TopicPartition(topic, 0)])
        got = []
        for _ in range(40):                  # bounded: 40 polls of at most 0.5 s
            for recs in c.poll(500).values():
                got += recs
            if len(got) >= 20:
                break
        assert [(r.offset, r.key, r.value) for r in got] == \
            [(i, b"k%d" % i, b"v%d" % i) for i in range(20)]
        if version >= (0, 10):
            assert all(r.timestamp > 0 for r in got)      # magic 1 carries timestamps
    finally:
        c.close()
