"""AdminClient: create, delete, list, describe and grow topics; read and change configs; list
offsets. Blocking calls over the client NetworkClient, each with a timeout, each raising a
KafkaError subclass whose message names the topic and says what to do.

    admin = AdminClient({"bootstrap.servers": "127.0.0.1:9092"})
    admin.create_topics([NewTopic("events", num_partitions=6)])
    admin.describe_topics(["events"])["events"].partitions[0].leader
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from ..protocol.errors import ErrorCode, KafkaError, error_for_code
from .config import COMMON_OPTIONS, Option, check_common, parse_config
from .consumer.offsets import EARLIEST, LATEST, MAX_TIMESTAMP, OffsetAndTimestamp, list_offsets
from .admin_acls import AclAdminMethods
from .admin_groups import GroupAdminMethods
from .admin_users import (ScramCredentialInfo, UserScramAdminMethods,
                          UserScramCredentialDeletion, UserScramCredentialUpsertion)
from .admin_quotas import QuotaAdminMethods
from .admin_transactions import TransactionAdminMethods
from .errors import ClientError
from .metadata import Metadata

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_GROUP = 32
CONFIG_OPS = {"set": 0, "delete": 1, "append": 2, "subtract": 3}   # IncrementalAlterConfigs
# Versions we stop at: the newest that still name topics (DeleteTopics v6 may use ids only
# when names are null, which we never send) and whose layout we describe.
_MAX_METADATA_VERSION = 12
_NOT_CONTROLLER = 41

ADMIN_OPTIONS: list[Option] = COMMON_OPTIONS + [
    Option("default.api.timeout.ms", 60000, int, min=1),
]


@dataclass
class NewTopic:
    name: str
    num_partitions: int = 1
    replication_factor: int = -1     # -1: the broker's default.replication.factor
    config: dict = field(default_factory=dict)
    replica_assignment: dict | None = None   # {partition: [broker ids]}


@dataclass
class PartitionDescription:
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]
    leader_epoch: int = -1
    offline_replicas: list[int] = field(default_factory=list)


@dataclass
class TopicDescription:
    name: str
    partitions: list[PartitionDescription]
    internal: bool = False
    topic_id: bytes | None = None

    @property
    def num_partitions(self) -> int:
        return len(self.partitions)

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].replicas) if self.partitions else 0


@dataclass
class ConfigEntry:
    name: str
    value: str | None
    read_only: bool = False
    is_default: bool = False
    source: int = -1
    is_sensitive: bool = False


@dataclass
class BrokerDescription:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass
class ClusterDescription:
    cluster_id: str | None
    controller_id: int
    brokers: list[BrokerDescription]


_CONFIG_SOURCES = {1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
                   3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG",
                   5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG"}


def _error(code: int, what: str, broker_message: str | None = None) -> KafkaError:
    """A KafkaError whose message says what failed, why and (where we know) what to do."""
    hints = {
        ErrorCode.TOPIC_ALREADY_EXISTS: "pick another name, or delete it first",
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "check the name with `gregor topics list`",
        ErrorCode.INVALID_PARTITIONS: "the partition count must be positive (and larger than "
                                      "the current count when adding partitions)",
        ErrorCode.INVALID_REPLICATION_FACTOR: "use a replication factor no larger than the "
                                              "number of brokers",
        ErrorCode.INVALID_TOPIC_EXCEPTION: "topic names use [a-zA-Z0-9._-], at most 249 chars",
        ErrorCode.INVALID_CONFIG: "check the config name and value",
        ErrorCode.TOPIC_DELETION_DISABLED: "enable delete.topic.enable on the broker",
    }
    base = error_for_code(code)
    text = f"{what}: {broker_message or base.message}"
    hint = hints.get(code)
    if hint:
        text += f" ({hint})"
    return error_for_code(code, text)


class AdminClient(GroupAdminMethods, TransactionAdminMethods, AclAdminMethods,
                  UserScramAdminMethods, QuotaAdminMethods):
    def __init__(self, config: dict | None = None, *, network=None, **kwargs):
        cfg = parse_config(ADMIN_OPTIONS, config, kwargs, what="admin", ignore_unknown=True)
        check_common(cfg)
        self.config = cfg
        if network is None:
            from .network import NetworkClient
            md = Metadata(cfg["metadata.max.age.ms"], allow_auto_topic_creation=False)
            network = NetworkClient(cfg, metadata=md)
        self._net = network
        self._closed = False

    def _timeout(self, timeout: float | None) -> float:
        if self._closed:
            raise ClientError("this admin client is closed; create a new one")
        return self.config["default.api.timeout.ms"] / 1000.0 if timeout is None else timeout

    # -- metadata-based calls ---------------------------------------------------------------
    def _metadata(self, topics: list[str] | None, timeout: float) -> dict:
        version = min(self._net.api_version(None, "Metadata", timeout=timeout) or 0,
                      _MAX_METADATA_VERSION)
        if topics is None:
            tl = [] if version == 0 else None
        else:
            tl = [{"name": t} for t in topics]
        body = {"topics": tl, "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False}
        resp = self._net.request(None, "Metadata", body, version, timeout)
        self._net.metadata.update(resp, self._net.clock())
        return resp

    @staticmethod
    def _describe(t: dict) -> TopicDescription:
        parts = [PartitionDescription(p["partition_index"], p["leader_id"],
                                      list(p["replica_nodes"]), list(p["isr_nodes"]),
                                      p.get("leader_epoch", -1),
                                      list(p.get("offline_replicas") or []))
                 for p in t["partitions"]]
        parts.sort(key=lambda p: p.partition)
        return TopicDescription(t["name"], parts, bool(t.get("is_internal", False)),
                                t.get("topic_id"))

    def list_topics(self, timeout: float | None = None, *,
                    include_internal: bool = False) -> dict[str, TopicDescription]:
        """{name: TopicDescription} for every topic in the cluster."""
        resp = self._metadata(None, self._timeout(timeout))
        out = {}
        for t in resp["topics"]:
            if t["error_code"] or t["name"] is None:
                continue
            d = self._describe(t)
            if d.internal and not include_internal:
                continue
            out[d.name] = d
        return dict(sorted(out.items()))

    def describe_topics(self, topics: Iterable[str],
                        timeout: float | None = None) -> dict[str, TopicDescription]:
        """{name: TopicDescription}; raises UnknownTopicOrPartitionError naming a missing
        topic."""
        topics = [topics] if isinstance(topics, str) else list(topics)
        timeout = self._timeout(timeout)
        deadline = time.monotonic() + timeout
        while True:
            resp = self._metadata(topics, max(0.001, deadline - time.monotonic()))
            out, retry = {}, False
            for t in resp["topics"]:
                code = t["error_code"]
                if code == ErrorCode.LEADER_NOT_AVAILABLE and time.monotonic() < deadline:
                    retry = True  # being created right now
                    continue
                if code:
                    raise _error(code, f"cannot describe topic {t['name']!r}")
                out[t["name"]] = self._describe(t)
            if not retry:
                return {name: out[name] for name in topics if name in out}
            time.sleep(0.05)

    def describe_cluster(self, timeout: float | None = None) -> ClusterDescription:
        resp = self._metadata([], self._timeout(timeout))
        return ClusterDescription(resp.get("cluster_id"), resp.get("controller_id", -1),
                                  [BrokerDescription(b["node_id"], b["host"], b["port"],
                                                     b.get("rack")) for b in resp["brokers"]])

    # -- controller calls ---------------------------------------------------------------------
    def _controller_request(self, api: str, make_body, timeout: float) -> dict:
        """Send to the controller (any broker when unknown); follow NOT_CONTROLLER once."""
        deadline = time.monotonic() + timeout
        for attempt in range(3):  # NOT_CONTROLLER twice in a row means the cluster is moving
            remaining = max(0.001, deadline - time.monotonic())
            md = self._net.metadata
            if md.last_update is None:
                self._metadata([], remaining)
            node = md.controller_id if md.controller_id in md.brokers else None
            version = self._net.api_version(node, api, timeout=remaining)
            if version is None:
                raise error_for_code(ErrorCode.UNSUPPORTED_VERSION,
                                     f"the broker does not support {api}")
            resp = self._net.request(node, api, make_body(version, remaining), version,
                                     remaining)
            codes = [r.get("error_code", 0) for key in ("topics", "responses", "results")
                     for r in resp.get(key) or []]
            if _NOT_CONTROLLER in codes and attempt < 2:
                self._metadata([], max(0.001, deadline - time.monotonic()))
                continue
            return resp
        return resp

    def create_topics(self, topics: Iterable, *, num_partitions: int = 1,
                      replication_factor: int = -1, config: Mapping | None = None,
                      timeout: float | None = None, validate_only: bool = False,
                      ignore_existing: bool = False) -> dict[str, None]:
        """Create topics (NewTopic objects or names, the latter with the keyword defaults).
        Raises the first failure (e.g. TopicAlreadyExistsError naming the topic) after every
        topic was tried; ignore_existing=True treats existing topics as success."""
        new = [t if isinstance(t, NewTopic) else
               NewTopic(t, num_partitions, replication_factor, dict(config or {}))
               for t in ([topics] if isinstance(topics, (str, NewTopic)) else topics)]
        timeout = self._timeout(timeout)

        def body(version, remaining):
            out = []
            for t in new:
                rf = t.replication_factor
                if rf < 0 and version < 4:
                    rf = 1  # brokers before CreateTopics v4 need an explicit factor
                out.append({
                    "name": t.name, "num_partitions": -1 if t.replica_assignment else
                    t.num_partitions, "replication_factor": -1 if t.replica_assignment else rf,
                    "assignments": [{"partition_index": p, "broker_ids": list(b)}
                                    for p, b in (t.replica_assignment or {}).items()],
                    "configs": [{"name": k, "value": None if v is None else str(v)}
                                for k, v in t.config.items()]})
            return {"topics": out, "timeout_ms": int(remaining * 1000),
                    "validate_only": validate_only}

        resp = self._controller_request("CreateTopics", body, timeout)
        return self._results(resp["topics"], "create topic", ignore_existing and
                             ErrorCode.TOPIC_ALREADY_EXISTS)

    def delete_topics(self, topics: Iterable[str], timeout: float | None = None, *,
                      ignore_missing: bool = False) -> dict[str, None]:
        names = [topics] if isinstance(topics, str) else list(topics)
        timeout = self._timeout(timeout)

        def body(version, remaining):
            if version >= 6:
                return {"topics": [{"name": n} for n in names],
                        "timeout_ms": int(remaining * 1000)}
            return {"topic_names": names, "timeout_ms": int(remaining * 1000)}

        resp = self._controller_request("DeleteTopics", body, timeout)
        return self._results(resp["responses"], "delete topic", ignore_missing and
                             ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)

    def create_partitions(self, new_totals: Mapping[str, int], timeout: float | None = None,
                          *, validate_only: bool = False) -> dict[str, None]:
        """Grow topics: {topic: new total partition count}."""
        timeout = self._timeout(timeout)

        def body(version, remaining):
            return {"topics": [{"name": t, "count": int(n), "assignments": None}
                               for t, n in new_totals.items()],
                    "timeout_ms": int(remaining * 1000), "validate_only": validate_only}

        resp = self._controller_request("CreatePartitions", body, timeout)
        return self._results(resp["results"], "add partitions to topic", None)

    @staticmethod
    def _results(items, what: str, ignored_code) -> dict[str, None]:
        out, first = {}, None
        for r in items:
            code = r["error_code"]
            if code and code != ignored_code:
                err = _error(code, f"cannot {what} {r['name']!r}", r.get("error_message"))
                first = first or err
            out[r["name"]] = None
        if first is not None:
            raise first
        return out

    # -- configs ------------------------------------------------------------------------------
    @staticmethod
    def _resources(resources) -> list[tuple[int, str]]:
        out = []
        for r in ([resources] if isinstance(resources, (str, tuple)) else resources):
            if isinstance(r, str):
                out.append((RESOURCE_TOPIC, r))
            else:
                kind, name = r
                kind = {"topic": RESOURCE_TOPIC, "broker": RESOURCE_BROKER,
                        "group": RESOURCE_GROUP}.get(kind, kind)
                out.append((int(kind), str(name)))
        return out

    def describe_configs(self, resources, timeout: float | None = None, *,
                         keys: list[str] | None = None) -> dict[str, dict[str, ConfigEntry]]:
        """resources: topic names, or ("topic"|"broker", name) pairs. Returns {name:
        {config name: ConfigEntry}}."""
        res = self._resources(resources)
        timeout = self._timeout(timeout)
        out = {}
        for kind, name in res:
            node = int(name) if kind == RESOURCE_BROKER else None
            version = self._net.api_version(node, "DescribeConfigs", timeout=timeout)
            if version is None:
                raise error_for_code(ErrorCode.UNSUPPORTED_VERSION,
                                     f"cannot describe configs of {name!r}: the broker does "
                                     "not support DescribeConfigs")
            body = {"resources": [{"resource_type": kind, "resource_name": name,
                                   "configuration_keys": keys}],
                    "include_synonyms": False, "include_documentation": False}
            resp = self._net.request(node, "DescribeConfigs", body, version, timeout)
            for r in resp["results"]:
                if r["error_code"]:
                    raise _error(r["error_code"], f"cannot describe configs of {name!r}",
                                 r.get("error_message"))
                out[r["resource_name"]] = {
                    c["name"]: ConfigEntry(
                        c["name"], c["value"], c["read_only"],
                        c.get("is_default", False) or c.get("config_source") == 5,
                        c.get("config_source", -1), c["is_sensitive"])
                    for c in r["configs"]}
        return out

    def incremental_alter_configs(self, changes: Mapping, timeout: float | None = None, *,
                                  validate_only: bool = False) -> None:
        """{topic_or_(kind, name): [(op, config, value)]}, op one of set, delete, append,
        subtract (IncrementalAlterConfigs: the resource's other configs stay as they are;
        kinds: topic, broker, group)."""
        timeout = self._timeout(timeout)
        for res_key, ops in changes.items():
            kind, name = self._resources([res_key])[0]
            node = int(name) if kind == RESOURCE_BROKER and name else None
            version = self._net.api_version(node, "IncrementalAlterConfigs", timeout=timeout)
            if version is None:
                raise error_for_code(ErrorCode.UNSUPPORTED_VERSION,
                                     f"cannot alter configs of {name!r} one by one: the "
                                     "broker does not support IncrementalAlterConfigs")
            body = {"resources": [{"resource_type": kind, "resource_name": name, "configs": [
                {"name": k, "config_operation": CONFIG_OPS[op],
                 "value": None if op == "delete" else str(v)} for op, k, v in ops]}],
                "validate_only": validate_only}
            resp = self._net.request(node, "IncrementalAlterConfigs", body, version, timeout)
            for r in resp["responses"]:
                if r["error_code"]:
                    raise _error(r["error_code"], f"cannot alter configs of {name!r}",
                                 r.get("error_message"))

    def alter_configs(self, changes: Mapping, timeout: float | None = None, *,
                      validate_only: bool = False) -> None:
        """{topic_or_(kind, name): {config: value or None to reset}}. With
        IncrementalAlterConfigs (brokers since Kafka 2.3) only the named configs change; else
        AlterConfigs, which replaces the whole set, after reading and merging the current
        non-default settings (a race with other writers that IncrementalAlterConfigs avoids)."""
        timeout = self._timeout(timeout)
        if self._net.api_version(None, "IncrementalAlterConfigs", timeout=timeout) is not None:
            self.incremental_alter_configs(
                {res: [("delete", k, None) if v is None else ("set", k, v)
                       for k, v in updates.items()] for res, updates in changes.items()},
                timeout, validate_only=validate_only)
            return
        for res_key, updates in changes.items():
            kind, name = self._resources([res_key])[0]
            current = self.describe_configs([(kind, name)], timeout)[name]
            merged = {k: e.value for k, e in current.items()
                      if not e.is_default and not e.read_only and e.source in (-1, 1, 2)}
            for k, v in updates.items():
                if v is None:
                    merged.pop(k, None)
                else:
                    merged[k] = str(v)
            node = int(name) if kind == RESOURCE_BROKER else None
            version = self._net.api_version(node, "AlterConfigs", timeout=timeout)
            if version is None:
                raise error_for_code(ErrorCode.UNSUPPORTED_VERSION,
                                     f"cannot alter configs of {name!r}: the broker does not "
                                     "support AlterConfigs (set topic configs when creating "
                                     "the topic instead)")
            body = {"resources": [{"resource_type": kind, "resource_name": name,
                                   "configs": [{"name": k, "value": v}
                                               for k, v in merged.items()]}],
                    "validate_only": validate_only}
            resp = self._net.request(node, "AlterConfigs", body, version, timeout)
            for r in resp["responses"]:
                if r["error_code"]:
                    raise _error(r["error_code"], f"cannot alter configs of {name!r}",
                                 r.get("error_message"))

    # -- offsets -----------------------------------------------------------------------------
    def list_offsets(self, specs: Mapping, timeout: float | None = None, *,
                     isolation_level: str = "read_uncommitted") -> dict:
        """{(topic, partition): "earliest" | "latest" | "max_timestamp" | timestamp_ms} ->
        {(topic, partition): OffsetAndTimestamp or None}."""
        named = {"earliest": EARLIEST, "latest": LATEST, "max_timestamp": MAX_TIMESTAMP}
        queries = {}
        for tp, spec in specs.items():
            queries[(tp[0], int(tp[1]))] = named[spec] if isinstance(spec, str) else int(spec)
        return list_offsets(self._net, queries,
                            isolation_level=1 if isolation_level == "read_committed" else 0,
                            timeout=self._timeout(timeout))

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._net.close()

    def __enter__(self) -> "AdminClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["AdminClient", "NewTopic", "TopicDescription", "PartitionDescription",
           "ConfigEntry", "ClusterDescription", "BrokerDescription", "OffsetAndTimestamp",
           "ADMIN_OPTIONS", "RESOURCE_TOPIC", "RESOURCE_BROKER", "ScramCredentialInfo",
           "UserScramCredentialUpsertion", "UserScramCredentialDeletion"]
