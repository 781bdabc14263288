"""A share-group member spoken by hand over the wire (for protocol tests of the broker)."""
from __future__ import annotations

import uuid

from gregor.testing.wire import WireClient

ACCEPT, RELEASE, REJECT, RENEW = 1, 2, 3, 4


def port_of(broker) -> int:
    return int(broker.bootstrap_servers.rsplit(":", 1)[1])


def topic_id(client: WireClient, topic: str) -> bytes:
    md = client.request("Metadata", 12, {"topics": [{"topic_id": bytes(16), "name": topic}],
                                         "allow_auto_topic_creation": False,
                                         "include_topic_authorized_operations": False})
    return bytes(md["topics"][0]["topic_id"])


def create_topic(client: WireClient, topic: str, partitions: int = 1) -> bytes:
    r = client.request("CreateTopics", 4, {
        "topics": [{"name": topic, "num_partitions": partitions, "replication_factor": 1,
                    "assignments": [], "configs": []}], "timeout_ms": 5000,
        "validate_only": False})
    assert r["topics"][0]["error_code"] == 0, r
    return topic_id(client, topic)


def produce(client: WireClient, topic: str, values, partition: int = 0) -> None:
    from gregor.protocol.records.batch import encode_batch
    data = encode_batch([(0, None, v, []) for v in values])
    r = client.request("Produce", 8, {"transactional_id": None, "acks": -1, "timeout_ms": 5000,
                                      "topic_data": [{"name": topic, "partition_data": [
                                          {"index": partition, "records": data}]}]})
    assert r["responses"][0]["partition_responses"][0]["error_code"] == 0, r


class Member:
    def __init__(self, broker, group: str, topics, member_id: str | None = None):
        self.client = WireClient(port_of(broker))
        self.group = group
        self.topics = list(topics)
        self.member_id = member_id or uuid.uuid4().hex[:22]
        self.epoch = 0
        self.session_epoch = 0
        self.assignment = None

    def heartbeat(self, epoch: int | None = None, topics="same") -> dict:
        r = self.client.request("ShareGroupHeartbeat", 1, {
            "group_id": self.group, "member_id": self.member_id,
            "member_epoch": self.epoch if epoch is None else epoch, "rack_id": None,
            "subscribed_topic_names": self.topics if topics == "same" else topics})
        if r["error_code"] == 0:
            self.epoch = r["member_epoch"]
            if r["assignment"] is not None:
                self.assignment = r["assignment"]["topic_partitions"]
        return r

    def fetch(self, tid: bytes, partition: int = 0, acks=(), version: int = 1,
              epoch: int | None = None, max_records: int = 500, max_wait_ms: int = 0,
              **extra) -> dict:
        body = {"group_id": self.group, "member_id": self.member_id,
                "share_session_epoch": self.session_epoch if epoch is None else epoch,
                "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20,
                "max_records": max_records, "batch_size": max_records,
                "share_acquire_mode": 0, "is_renew_ack": False,
                "topics": [{"topic_id": tid, "partitions": [
                    {"partition_index": partition, "partition_max_bytes": 0,
                     "acknowledgement_batches": [
                         {"first_offset": f, "last_offset": la, "acknowledge_types": list(t)}
                         for f, la, t in acks]}]}],
                "forgotten_topics_data": [], **extra}
        r = self.client.request("ShareFetch", version, body)
        if r["error_code"] == 0 and epoch is None:
            self.session_epoch = self.session_epoch + 1 if self.session_epoch >= 0 else 0
        return r

    def acknowledge(self, tid: bytes, acks, partition: int = 0, version: int = 1,
                    epoch: int | None = None, renew: bool = False) -> dict:
        r = self.client.request("ShareAcknowledge", version, {
            "group_id": self.group, "member_id": self.member_id,
            "share_session_epoch": self.session_epoch if epoch is None else epoch,
            "is_renew_ack": renew,
            "topics": [{"topic_id": tid, "partitions": [
                {"partition_index": partition, "acknowledgement_batches": [
                    {"first_offset": f, "last_offset": la, "acknowledge_types": list(t)}
                    for f, la, t in acks]}]}]})
        if r["error_code"] == 0 and epoch is None:
            self.session_epoch += 1
        return r

    def close(self) -> None:
        self.client.close()


def part(resp: dict) -> dict:
    return resp["responses"][0]["partitions"][0]


def acquired(resp: dict) -> list[tuple[int, int, int]]:
    return [(a["first_offset"], a["last_offset"], a["delivery_count"])
            for t in resp["responses"] for p in t["partitions"] for a in p["acquired_records"]]
