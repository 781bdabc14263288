"""Run an in-process Broker (no sockets) and call its handlers with decoded requests."""
from __future__ import annotations

import asyncio
import time

from gregor.broker import apis
from gregor.broker.broker import Broker
from gregor.broker.config import BrokerConfig
from gregor.broker.server import RequestContext
from gregor.protocol import messages
from gregor.protocol.header import RequestHeader, decode_request, encode_request
from gregor.protocol.records.batch import decode_batches, encode_batch


def run_broker(data_dir, scenario, **settings):
    """asyncio.run(scenario(broker)) with a Broker opened on data_dir, shut down afterwards."""
    async def main():
        cfg = BrokerConfig({"log.dirs": str(data_dir),
                            **{k.replace("_", "."): v for k, v in settings.items()}})
        b = Broker(cfg)
        b.open()
        b.handlers = apis.build_handlers(b)
        b.api_version_table = apis.version_table(b.handlers)
        try:
            return await scenario(b)
        finally:
            await b.shutdown()
    return asyncio.run(main())


class As:
    """Who an in-process request comes from (without it: the broker itself, BROKER_SELF):
    call(broker, ..., who=As(KafkaPrincipal("User", "alice"), "10.0.0.1"))."""

    def __init__(self, principal, client_host: str = "127.0.0.1", listener: str = "PLAINTEXT"):
        self.principal = principal
        self.client_host = client_host
        self.listener = listener
        self.peer = f"{client_host}:50000"
        self.authz_memo = None      # allowed ACL decisions (gregor/broker/security/checks.py)


async def call(broker, api_name: str, version: int, body: dict, who: As | None = None):
    """Encode body at version, decode it as the server would, run the handler, await a delayed
    result, and check the response encodes. Returns the response dict (or the sentinel)."""
    api = messages.api(api_name)
    request = _as_the_server_decodes(api, version, body)
    ctx = RequestContext(who, api, RequestHeader(api.key, version, 1, "test"), time.perf_counter())
    result = broker.handlers[api.key].handle(ctx, request)
    if isinstance(result, asyncio.Future):
        result = await result
    if isinstance(result, dict):
        resp_codec = api.response_codec(version)
        return resp_codec.decode(resp_codec.encode(result))
    return result


def start_call(broker, api_name: str, version: int, body: dict, who: As | None = None):
    """Like call() but returns the handler's raw result (a Future when it waits)."""
    api = messages.api(api_name)
    request = _as_the_server_decodes(api, version, body)
    ctx = RequestContext(who, api, RequestHeader(api.key, version, 1, "test"), time.perf_counter())
    return broker.handlers[api.key].handle(ctx, request)


def _as_the_server_decodes(api, version: int, body: dict) -> dict:
    """The request body as the server hands it to handlers: records fields are memoryviews of
    the received frame, not bytes."""
    frame = encode_request(api, version, 1, "test", body)
    return decode_request(api, memoryview(frame)[4:], view_records=True)[1]


def batch(*values, key=b"k", ts=None, **kw) -> bytes:
    ts = int(time.time() * 1000) if ts is None else ts
    return encode_batch([(ts, key, v, [("h", b"1")]) for v in values], **kw)


def produce_body(topic, records, partition=0, acks=1, timeout_ms=5000, extra=()):
    parts = [{"index": partition, "records": records}] + [
        {"index": p, "records": r} for p, r in extra]
    return {"transactional_id": None, "acks": acks, "timeout_ms": timeout_ms,
            "topic_data": [{"name": topic, "partition_data": parts}]}


def presp(resp, i=0):
    """The i-th partition response of a Produce response."""
    return [p for t in resp["responses"] for p in t["partition_responses"]][i]


def fetch_body(topic, offset, partition=0, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
               partition_max_bytes=1 << 20):
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes,
            "max_bytes": max_bytes, "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [
                {"partition": partition, "fetch_offset": offset, "log_start_offset": -1,
                 "partition_max_bytes": partition_max_bytes}]}],
            "forgotten_topics_data": [], "rack_id": ""}


def fresp(resp, i=0):
    return [p for t in resp["responses"] for p in t["partitions"]][i]


def values_of(records: bytes) -> list[bytes]:
    return [r.value for b in decode_batches(records) for r in b.records]


async def create(broker, name, partitions=1, configs=None):
    resp = await call(broker, "CreateTopics", 4, {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1,
                    "assignments": [], "configs": [{"name": k, "value": str(v)}
                                                   for k, v in (configs or {}).items()]}],
        "timeout_ms": 1000, "validate_only": False})
    assert resp["topics"][0]["error_code"] == 0, resp


async def committed(broker, timeout: float = 10.0) -> None:
    """Wait until every partition's high watermark reached its log end (the group commit ran);
    bounded by timeout."""
    deadline = time.monotonic() + timeout
    rm = broker.replica_manager
    while any(p.high_watermark < p.log.log_end_offset for p in rm.partitions.values()):
        assert time.monotonic() < deadline, "the group commit did not finish"
        await asyncio.sleep(0.002)


async def wait_for_cleaner(pred, timeout: float = 120.0) -> None:
    """Until pred() holds (generous: a loaded machine)."""
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "the cleaner did not run"
        await asyncio.sleep(0.02)


async def compact_now(broker, p, data_dir) -> int:
    """Roll p's active segment and run one pass of the broker's log cleaner over it; returns
    the log's size before. (The pass is counted before its checkpoint is written, both on the
    cleaner's thread, so both are waited for.)"""
    p.log.roll()
    before = p.log.size_bytes
    broker._start_cleaner(asyncio.get_running_loop())
    broker.cleaner.wake()
    await wait_for_cleaner(lambda: broker.cleaner.stats.passes >= 1
                           and (data_dir / "cleaner-offset-checkpoint").exists())
    return before
