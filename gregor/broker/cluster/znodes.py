"""Kafka's ZooKeeper layout (ZooKeeper mode, 2.7-3.9): paths and JSON bodies, sans-I/O.

Bodies are byte-for-byte shaped like Kafka's (same keys, same types: timestamps, cluster id
version and producer-id block bounds are JSON strings there), so Kafka's own tools and
operators reading the tree see what they expect.
"""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field

BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
CONFIG_TOPICS = "/config/topics"
CLUSTER_ID = "/cluster/id"
PRODUCER_ID_BLOCK = "/latest_producer_id_block"
DELETE_TOPICS = "/admin/delete_topics"
# Created at start-up, as Kafka's KafkaZkClient.createTopLevelPaths does.
PERSISTENT_PATHS = (BROKER_IDS, TOPICS, "/brokers/seqid", "/config/changes", CONFIG_TOPICS,
                    "/config/clients", "/config/users", "/config/ips", "/config/brokers",
                    DELETE_TOPICS,
                    "/isr_change_notification", "/latest_producer_id_block")

BROKER_VERSION = 5          # v5 (Kafka 2.7+) adds "features"
ASSIGNMENT_VERSION = 3      # v3 (Kafka 2.8+) adds "topic_id"
STATE_VERSION = 1
INITIAL_CONTROLLER_EPOCH = 0     # the first elected controller writes 1


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{TOPICS}/{topic}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}"


def state_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}/state"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


def _dump(doc: dict) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


def _load(data: bytes | None) -> dict:
    if not data:
        raise ValueError("empty znode")
    doc = json.loads(data)
    if not isinstance(doc, dict):
        raise ValueError(f"expected a JSON object, got {type(doc).__name__}")
    return doc


# -- /brokers/ids/<id> -------------------------------------------------------------------

@dataclass(frozen=True)
class BrokerInfo:
    broker_id: int
    host: str
    port: int
    rack: str | None = None
    timestamp_ms: int = 0
    endpoints: tuple[str, ...] = ()
    # (listener name, security protocol); a listener not named here is PLAINTEXT
    protocols: tuple[tuple[str, str], ...] = ()

    def protocol(self, listener: str) -> str:
        return dict(self.protocols).get(listener, "PLAINTEXT")

    def encode(self) -> bytes:
        endpoints = list(self.endpoints) or [f"PLAINTEXT://{self.host}:{self.port}"]
        names = [_split_endpoint(e)[0] for e in endpoints]
        # host/port are the first PLAINTEXT listener's (for pre-0.10 readers), null without
        # one, as Kafka's BrokerInfo writes them
        plain_name = next((n for n in names if self.protocol(n) == "PLAINTEXT"), None)
        plain = self.endpoint(plain_name) if plain_name else None
        return _dump({"features": {}, "listener_security_protocol_map": {
            n: self.protocol(n) for n in names}, "endpoints": endpoints, "jmx_port": -1,
            "port": plain[1] if plain else -1, "host": plain[0] if plain else None,
            "version": BROKER_VERSION, "timestamp": str(self.timestamp_ms), "rack": self.rack})

    def endpoint(self, listener: str | None = None) -> tuple[str, int] | None:
        """(host, port) on the named listener; None when the broker has no such listener.
        Without a name, the first endpoint."""
        if not self.endpoints:
            return (self.host, self.port) if listener in (None, "PLAINTEXT") else None
        for entry in self.endpoints:
            name, host, port = _split_endpoint(entry)
            if listener is None or name == listener:
                return host, port
        return None

    @classmethod
    def decode(cls, broker_id: int, data: bytes) -> "BrokerInfo":
        doc = _load(data)
        endpoints = tuple(doc.get("endpoints") or ())
        host, port = doc.get("host"), doc.get("port", -1)
        if (not host or port in (None, -1)) and endpoints:
            # host/port are null when there is no PLAINTEXT listener; take the first endpoint.
            _, host, port = _split_endpoint(endpoints[0])
        protocols = doc.get("listener_security_protocol_map") or {}
        return cls(broker_id, host or "", int(port), doc.get("rack"),
                   int(doc.get("timestamp") or 0), endpoints,
                   tuple((str(k).upper(), str(v).upper()) for k, v in protocols.items()))


def split_endpoint(entry: str) -> tuple[str, str, int]:
    """'NAME://host:port' -> (NAME, host, port)."""
    name, _, hostport = entry.partition("://")
    host, _, port = hostport.rpartition(":")
    return name.upper(), host.strip("[]"), int(port)


_split_endpoint = split_endpoint


# -- /controller, /controller_epoch ------------------------------------------------------

def encode_controller(broker_id: int, timestamp_ms: int) -> bytes:
    return _dump({"version": 1, "brokerid": broker_id, "timestamp": str(timestamp_ms)})


def decode_controller(data: bytes) -> int:
    """The controller's broker id (also accepts the bare number pre-0.9 Kafka wrote)."""
    try:
        doc = json.loads(data)
    except ValueError:
        raise ValueError(f"/controller holds {data!r}") from None
    if isinstance(doc, int):
        return doc
    return int(doc["brokerid"])


def encode_epoch(epoch: int) -> bytes:
    return str(epoch).encode()


def decode_epoch(data: bytes) -> int:
    return int(data.decode().strip())


# -- /brokers/topics/<t> -----------------------------------------------------------------

def topic_id_bytes(text: str | None) -> bytes:
    """Kafka's textual topic id (url-safe base64, no padding) as the wire's 16-byte uuid."""
    if not text:
        return bytes(16)
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def topic_id_text(raw: bytes | None) -> str | None:
    """The wire's uuid as Kafka's textual topic id; None for the zero uuid."""
    if not raw or raw == bytes(16):
        return None
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def topic_id_hex(text: str | None) -> str:
    """Kafka's textual topic id as the 32 hex characters a broker's TopicInfo keeps."""
    return topic_id_bytes(text).hex()


@dataclass
class TopicAssignment:
    partitions: dict[int, list[int]]
    topic_id: str | None = None          # Kafka's textual uuid (url-safe base64, no padding)

    def encode(self) -> bytes:
        doc = {"partitions": {str(p): list(r) for p, r in sorted(self.partitions.items())},
               "topic_id": self.topic_id, "adding_replicas": {}, "removing_replicas": {},
               "version": ASSIGNMENT_VERSION}
        if self.topic_id is None:
            del doc["topic_id"]
        return _dump(doc)

    @classmethod
    def decode(cls, data: bytes) -> "TopicAssignment":
        doc = _load(data)
        parts = {int(p): [int(b) for b in r] for p, r in (doc.get("partitions") or {}).items()}
        return cls(parts, doc.get("topic_id"))


# -- /brokers/topics/<t>/partitions/<p>/state --------------------------------------------

@dataclass
class PartitionState:
    leader: int
    leader_epoch: int
    isr: list[int]
    controller_epoch: int
    zk_version: int = -1                 # the znode's version: the partition epoch

    def encode(self) -> bytes:
        return _dump({"controller_epoch": self.controller_epoch, "leader": self.leader,
                      "version": STATE_VERSION, "leader_epoch": self.leader_epoch,
                      "isr": list(self.isr)})

    @classmethod
    def decode(cls, data: bytes, zk_version: int = -1) -> "PartitionState":
        doc = _load(data)
        return cls(int(doc["leader"]), int(doc["leader_epoch"]), [int(b) for b in doc["isr"]],
                   int(doc["controller_epoch"]), zk_version)


# -- /config/topics/<t>, /cluster/id, /latest_producer_id_block --------------------------

def encode_topic_config(configs: dict[str, str]) -> bytes:
    return _dump({"version": 1, "config": {k: str(v) for k, v in configs.items()}})


def decode_topic_config(data: bytes | None) -> dict[str, str]:
    if not data:
        return {}
    return {k: str(v) for k, v in (_load(data).get("config") or {}).items()}


def encode_cluster_id(cluster_id: str) -> bytes:
    return _dump({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes) -> str:
    return str(_load(data)["id"])


@dataclass(frozen=True)
class ProducerIdBlock:
    broker_id: int
    first: int
    last: int                            # inclusive, as Kafka writes block_end

    def encode(self) -> bytes:
        return _dump({"version": 1, "broker": self.broker_id, "block_start": str(self.first),
                      "block_end": str(self.last)})

    @classmethod
    def decode(cls, data: bytes) -> "ProducerIdBlock":
        doc = _load(data)
        return cls(int(doc["broker"]), int(doc["block_start"]), int(doc["block_end"]))


@dataclass
class TopicView:
    """One topic as every broker sees it: assignment, states and configs."""
    name: str
    assignment: TopicAssignment
    states: dict[int, PartitionState] = field(default_factory=dict)
    configs: dict[str, str] = field(default_factory=dict)
    deleting: bool = False
