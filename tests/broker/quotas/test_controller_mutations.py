"""controller_mutation_rate (KIP-599) on CreateTopics, CreatePartitions and DeleteTopics:
strict for new versions (THROTTLING_QUOTA_EXCEEDED once the bucket is empty), permissive for
old ones (done, and throttled), through the wire codecs."""
from __future__ import annotations

import asyncio
import time


from gregor.broker.quotas.service import QuotaService
from gregor.broker.security.principal import ANONYMOUS
from gregor.broker.server import RequestContext
from gregor.protocol import messages
from gregor.protocol.errors import ErrorCode
from gregor.protocol.header import RequestHeader
from tests.broker.handler_harness import _as_the_server_decodes, run_broker

THROTTLED = ErrorCode.THROTTLING_QUOTA_EXCEEDED


class _Conn:
    """What handlers and the quota code read of a connection."""
    principal = ANONYMOUS
    client_host = "127.0.0.1"
    closed = False
    peer = "test"

    def throttle(self, ms):
        pass


async def call(broker, api_name, version, body, client_id="admin"):
    api = messages.api(api_name)
    ctx = RequestContext(_Conn(), api, RequestHeader(api.key, version, 1, client_id),
                         time.perf_counter())
    result = broker.handlers[api.key].handle(ctx, _as_the_server_decodes(api, version, body))
    if isinstance(result, asyncio.Future):
        result = await result
    codec = api.response_codec(version)
    return codec.decode(codec.encode(result))


def new_topic(name, partitions):
    return {"name": name, "num_partitions": partitions, "replication_factor": 1,
            "assignments": [], "configs": []}


async def with_quota(broker, rate: float):
    broker.quotas = QuotaService(broker.config)
    broker.quotas.start(broker.entity_configs, None)
    await broker.entity_configs.alter("clients/admin",
                                      {"controller_mutation_rate": str(rate)})


def test_strict_versions_refuse_topics_once_the_bucket_is_empty(tmp_path):
    async def scenario(b):
        # burst = 2 windows x 1 s x 5/s = 10 partitions; the refill (5/s) is slow next to
        # what the requests ask, so the outcome does not depend on timing
        await with_quota(b, 5.0)
        try:
            resp = await call(b, "CreateTopics", 7, {"topics": [
                new_topic("a", 6), new_topic("b", 6), new_topic("c", 6)], "timeout_ms": 1000,
                "validate_only": False})
            codes = [t["error_code"] for t in resp["topics"]]
            assert codes == [0, 0, THROTTLED]       # b may take the bucket below zero
            assert "controller_mutation_rate" in resp["topics"][2]["error_message"]
            assert resp["throttle_time_ms"] > 0
            assert resp["topics"][0]["num_partitions"] == 6
            assert resp["topics"][0]["topic_id"] != bytes(16)
            assert b.store.get("c") is None
            resp = await call(b, "CreatePartitions", 3, {"topics": [
                {"name": "a", "count": 8, "assignments": None}], "timeout_ms": 1000,
                "validate_only": False})
            assert resp["results"][0]["error_code"] == THROTTLED
            assert b.store.get("a").partitions == 6
            resp = await call(b, "DeleteTopics", 5, {"topic_names": ["a"], "timeout_ms": 1000})
            assert resp["responses"][0]["error_code"] == THROTTLED
            assert b.store.get("a") is not None
            # other clients have their own budget (the quota is client "admin"'s only)
            resp = await call(b, "DeleteTopics", 5, {"topic_names": ["a"], "timeout_ms": 1000},
                              client_id="someone-else")
            assert resp["responses"][0]["error_code"] == 0
        finally:
            b.quotas.close()
    run_broker(tmp_path, scenario, quota_window_num=2, controller_quota_window_num=2)


def test_permissive_versions_do_the_work_and_throttle(tmp_path):
    async def scenario(b):
        await with_quota(b, 5.0)
        try:
            resp = await call(b, "CreateTopics", 4, {"topics": [
                new_topic("a", 6), new_topic("b", 6), new_topic("c", 6)], "timeout_ms": 1000,
                "validate_only": False})
            assert [t["error_code"] for t in resp["topics"]] == [0, 0, 0]
            assert resp["throttle_time_ms"] > 0            # 8 partitions in debt
            resp = await call(b, "DeleteTopics", 3, {"topic_names": ["a", "b"],
                                                     "timeout_ms": 1000})
            assert [t["error_code"] for t in resp["responses"]] == [0, 0]
            assert resp["throttle_time_ms"] > 0
        finally:
            b.quotas.close()
    run_broker(tmp_path, scenario, quota_window_num=2, controller_quota_window_num=2)
