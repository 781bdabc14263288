"""Metadata v13 (KIP-1102's top-level error code): served, encoded, and asked by librdkafka."""
import pytest

from gregor.protocol import messages

from .handler_harness import call, create, run_broker


def test_v13_carries_a_top_level_error_code(tmp_path):
    async def s(b):
        await create(b, "t", partitions=2)
        m = await call(b, "Metadata", 13, {"topics": [{"name": "t", "topic_id": bytes(16)}],
                                            "allow_auto_topic_creation": False,
                                            "include_topic_authorized_operations": False})
        assert m["error_code"] == 0
        assert [t["name"] for t in m["topics"]] == ["t"] and len(m["topics"][0]["partitions"]) == 2
        # the field is on the wire at v13 only: v12's encoding is two bytes shorter
        codec = messages.api("Metadata").response_codec
        assert len(codec(13).encode(m)) == len(codec(12).encode(m)) + 2
    run_broker(tmp_path, s)


def test_librdkafka_asks_for_v13_and_works():
    admin_mod = pytest.importorskip("confluent_kafka.admin",
                                    reason="confluent-kafka is a test dependency")
    from gregor.testing import Broker
    with Broker() as broker:
        broker.create_topic("meta13", partitions=3)
        admin = admin_mod.AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        md = admin.list_topics(topic="meta13", timeout=30)
        assert sorted(md.topics["meta13"].partitions) == [0, 1, 2]
        versions = {r.version for r in broker.requests("Metadata")}
        assert 13 in versions, versions
