"""Recovery after kill -9 with many small segments and every codec: the restarted broker
rebuilds its indexes and serves exactly the same records, offsets and timestamp lookups."""
from __future__ import annotations

import pytest

from tests.interop.dataset import CODECS, make_records, timestamp_probes, verify_exact
from tests.interop.test_interop_confluent_kafka import ConfluentKafkaClient
from tests.interop.wire import check_codec_used
from tests.support.broker import BrokerProcess

pytestmark = pytest.mark.interop

SEGMENT_BYTES = 64 * 1024  # small, so 10,000 records span many segments and index files
PER_CODEC = 2_000


def cluster_of(bootstrap: str) -> str:
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).cluster_id


def test_kill_9_then_restart_serves_identical_data_across_segments(tmp_path):
    b = BrokerProcess(tmp_path / "data", settings={"log.segment.bytes": SEGMENT_BYTES,
                                                   "log.index.interval.bytes": 1024}).start()
    client = ConfluentKafkaClient(**{"batch.size": 16384})  # batches must fit a segment
    try:
        delivered = {}
        for codec in CODECS:
            topic = f"recovery-{codec}"
            partitions = client.create_topic(b.bootstrap, topic, 2)
            recs = make_records(PER_CODEC, tag=topic)
            delivered[topic] = (partitions, client.produce(b.bootstrap, topic, recs, codec, None))
        before = {t: client.consume(b.bootstrap, t, parts, PER_CODEC)
                  for t, (parts, _) in delivered.items()}
        segments = list((tmp_path / "data").rglob("*.log"))
        assert len(segments) > 2 * len(CODECS), (
            f"expected several segments per partition, found {len(segments)}")
        cluster_id = cluster_of(b.bootstrap)
        b.kill()
        b.start()
        assert cluster_of(b.bootstrap) == cluster_id, "the cluster id changed across a restart"
        for topic, (partitions, dl) in delivered.items():
            after = client.consume(b.bootstrap, topic, partitions, PER_CODEC)
            verify_exact(dl, after)
            check_codec_used(b.port, topic, partitions, topic.split("-")[1])
            assert sorted(after, key=lambda g: (g.partition, g.offset)) == \
                sorted(before[topic], key=lambda g: (g.partition, g.offset))
            probes = {p: timestamp_probes(after, p) for p in range(partitions)}
            earliest, latest, by_time = client.list_offsets(
                b.bootstrap, topic, partitions, {p: [ts for ts, _ in pr] for p, pr in probes.items()})
            assert earliest == {p: 0 for p in range(partitions)}
            assert latest == {p: sum(1 for g in after if g.partition == p) for p in range(partitions)}
            for p, pr in probes.items():
                for ts, want in pr:
                    assert by_time[(p, ts)] == want, (
                        f"{topic}[{p}] after recovery: offset for {ts} is {by_time[(p, ts)]}, "
                        f"expected {want}")
        # and it keeps appending where it left off
        more = client.produce(b.bootstrap, "recovery-none", make_records(10, tag="more"),
                              "none", None)
        counts = {p: sum(1 for d in delivered["recovery-none"][1] if d.partition == p)
                  for p in range(2)}
        for d in more:
            assert d.offset == counts[d.partition], "offsets after recovery do not continue"
            counts[d.partition] += 1
    finally:
        b.stop()
