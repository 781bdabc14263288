"""Quotas in a cluster: a change made through any broker (or written by Kafka's tools into
ZooKeeper) is in force on every broker moments later, and a user's SCRAM credentials in the
same znode are kept."""
from __future__ import annotations

import itertools
import json
import struct
import time

from gregor.client.admin import AdminClient
from gregor.protocol import messages
from gregor.protocol.header import decode_response, encode_request
from tests.faults import frames

_corr = itertools.count(1)


def ask(port: int, api: str, version: int, body: dict, client_id: str = "t") -> dict:
    with frames.connect(port) as s:
        s.sendall(encode_request(messages.api(api), version, next(_corr), client_id, body))
        (size,) = struct.unpack(">i", frames.recv_exact(s, 4))
        return decode_response(messages.api(api), version, frames.recv_exact(s, size))[1]


def quotas_on(port: int) -> dict:
    resp = ask(port, "DescribeClientQuotas", 1, {"components": [], "strict": False})
    return {tuple((e["entity_type"], e["entity_name"]) for e in entry["entity"]):
            {v["key"]: v["value"] for v in entry["values"]} for entry in resp["entries"]}


def until_everywhere(cluster, predicate, what):
    """Seconds until every broker satisfies predicate(port)."""
    start = time.monotonic()
    cluster.wait_for(lambda: all(predicate(b.port) for b in cluster.brokers),
                     timeout=30, what=what)
    return time.monotonic() - start


def test_a_change_through_one_broker_is_in_force_on_all(three_brokers):
    c = three_brokers
    first = c.brokers[0]
    c.zk.create("/config/users/alice", json.dumps({"version": 1, "config": {
        "SCRAM-SHA-256": "salt=c2FsdA==,stored_key=a2V5,server_key=c2tleQ==,iterations=4096"}}
    ).encode(), makepath=True)
    with AdminClient({"bootstrap.servers": first.bootstrap}) as admin:
        admin.alter_client_quotas([({"user": "alice"}, {"producer_byte_rate": 1 << 20}),
                                   ({"client-id": "busy"}, {"request_percentage": 0.01})])
    took = until_everywhere(
        c, lambda port: quotas_on(port).get((("user", "alice"),)) == {
            "producer_byte_rate": float(1 << 20)}, "alice's quota on every broker")
    print(f"in force on all three brokers {took * 1000:.0f} ms after the change was answered")
    stored = json.loads(c.zk.get("/config/users/alice")[0])
    assert set(stored["config"]) == {"SCRAM-SHA-256", "producer_byte_rate"}

    # enforced by a broker that did not take the change: busy's Metadata gets throttled
    last = c.brokers[2]
    throttled = 0
    for _ in range(200):
        throttled = ask(last.port, "Metadata", 8, {"topics": None,
                                                   "allow_auto_topic_creation": False},
                        client_id="busy")["throttle_time_ms"]
        if throttled:
            break
    assert throttled > 0


def test_kafka_configs_znodes_reach_every_broker(three_brokers):
    c = three_brokers
    c.zk.create("/config/clients/app%201", json.dumps(
        {"version": 1, "config": {"consumer_byte_rate": "2048"}}).encode(), makepath=True)
    c.zk.create("/config/changes/config_change_", json.dumps(
        {"version": 2, "entity_path": "clients/app%201"}).encode(), sequence=True)
    until_everywhere(c, lambda port: quotas_on(port).get((("client-id", "app 1"),)) ==
                     {"consumer_byte_rate": 2048.0}, "the hand-written quota everywhere")
    # and removed the same way
    c.zk.set("/config/clients/app%201", json.dumps({"version": 1, "config": {}}).encode())
    c.zk.create("/config/changes/config_change_", json.dumps(
        {"version": 2, "entity_path": "clients/app%201"}).encode(), sequence=True)
    until_everywhere(c, lambda port: (("client-id", "app 1"),) not in quotas_on(port),
                     "the removal everywhere")
