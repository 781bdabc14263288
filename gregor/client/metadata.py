"""The client's cache of cluster metadata: brokers, topics, partition leaders.

Sans-I/O: `update()` takes a decoded Metadata response body; the network client decides when to
ask (max age passed, an update requested after NOT_LEADER / UNKNOWN_TOPIC / a disconnect).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

from ..protocol.errors import error_for_code


@dataclass(slots=True, frozen=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(slots=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    leader_epoch: int = -1
    replicas: list[int] = field(default_factory=list)
    isr: list[int] = field(default_factory=list)
    offline: list[int] = field(default_factory=list)
    error_code: int = 0


@dataclass(slots=True)
class TopicInfo:
    name: str
    error_code: int
    is_internal: bool
    partitions: dict[int, PartitionInfo]
    topic_id: bytes | None = None


class Metadata:
    """Thread-safe for readers: updates swap whole dicts, so a reader sees one version."""

    def __init__(self, max_age_ms: int = 300000, *, allow_auto_topic_creation: bool = True,
                 track_all_topics: bool = False, idle_ms: int | None = None):
        self.max_age_ms = max_age_ms
        # metadata.max.idle.ms (producers): a tracked topic not touched for this long is
        # forgotten at the next refresh, so it is neither asked for nor cached any more.
        self.idle_ms = idle_ms
        self._last_used: dict[str, float] = {}
        self.allow_auto_topic_creation = allow_auto_topic_creation
        self.track_all_topics = track_all_topics
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.controller_id = -1
        self.cluster_id: str | None = None
        self.version = 0
        self.last_update = None  # clock value of the last successful update
        self._need_update = True
        self._tracked: set[str] = set()
        self._cond = threading.Condition()
        self.listeners: list = []  # called (no arguments) after every update

    # -- what to ask for ---------------------------------------------------------------------
    def add_topic(self, topic: str) -> None:
        """Track topic from now on; asks for an update if it is new."""
        if topic not in self._tracked:
            self._tracked = self._tracked | {topic}
            if topic not in self.topics:
                self._need_update = True

    def touch(self, topic: str, now: float) -> None:
        """The topic is in use (a producer sent records to it) at clock time now."""
        self._last_used[topic] = now

    def retire_idle(self, now: float) -> list[str]:
        """Forget tracked topics not touched for idle_ms (never-touched ones are kept);
        returns them. Listeners are told, as after an update."""
        if self.idle_ms is None:
            return []
        limit = self.idle_ms / 1000.0
        idle = [t for t, used in list(self._last_used.items()) if now - used >= limit]
        if not idle:
            return []
        gone = set(idle)
        self._tracked = self._tracked - gone
        self.topics = {k: v for k, v in self.topics.items() if k not in gone}
        for t in idle:
            self._last_used.pop(t, None)
        self.version += 1
        for fn in list(self.listeners):
            fn()
        return idle

    @property
    def tracked_topics(self) -> list[str] | None:
        """Topics to ask for; None means all topics."""
        return None if self.track_all_topics else sorted(self._tracked)

    def request_update(self) -> None:
        self._need_update = True

    def needs_update(self, now: float) -> bool:
        if self._need_update or self.last_update is None:
            return True
        return (now - self.last_update) * 1000.0 >= self.max_age_ms

    def time_to_next_update(self, now: float) -> float:
        """Seconds until the cache is due for a refresh (0 when due)."""
        if self.needs_update(now):
            return 0.0
        return max(0.0, self.last_update + self.max_age_ms / 1000.0 - now)

    # -- updates -----------------------------------------------------------------------------
    def update(self, body: dict, now: float) -> None:
        brokers = {b["node_id"]: BrokerInfo(b["node_id"], b["host"], b["port"], b.get("rack"))
                   for b in body.get("brokers") or []}
        topics = {} if self.track_all_topics else dict(self.topics)
        retry_soon = False
        for t in body.get("topics") or []:
            name = t.get("name")
            if name is None:
                continue
            parts = {}
            for p in t.get("partitions") or []:
                idx = p["partition_index"]
                parts[idx] = PartitionInfo(
                    name, idx, p.get("leader_id", -1), p.get("leader_epoch", -1),
                    list(p.get("replica_nodes") or []), list(p.get("isr_nodes") or []),
                    list(p.get("offline_replicas") or []), p.get("error_code", 0))
                if parts[idx].leader < 0:
                    retry_soon = True
            code = t.get("error_code", 0)
            if code:
                # LEADER_NOT_AVAILABLE / UNKNOWN_TOPIC while the topic is being created: ask
                # again soon rather than waiting for metadata.max.age.ms.
                retry_soon = True
            topics[name] = TopicInfo(name, code, bool(t.get("is_internal", False)), parts,
                                     t.get("topic_id"))
        with self._cond:
            self.brokers = brokers
            self.topics = topics
            self.controller_id = body.get("controller_id", -1)
            self.cluster_id = body.get("cluster_id")
            self.version += 1
            self.last_update = now
            self._need_update = retry_soon
            self._cond.notify_all()
        for fn in list(self.listeners):
            fn()

    def wait_for_version(self, version: int, timeout: float) -> bool:
        """Block until an update newer than version lands (used by send() threads)."""
        with self._cond:
            return self._cond.wait_for(lambda: self.version > version, timeout)

    # -- queries -----------------------------------------------------------------------------
    def partitions_for(self, topic: str) -> list[int] | None:
        t = self.topics.get(topic)
        if t is None or not t.partitions:
            return None
        return sorted(t.partitions)

    def partition_count(self, topic: str) -> int | None:
        t = self.topics.get(topic)
        return len(t.partitions) if t is not None and t.partitions else None

    def available_partitions(self, topic: str) -> list[int]:
        t = self.topics.get(topic)
        if t is None:
            return []
        return sorted(i for i, p in t.partitions.items() if p.leader >= 0)

    def leader_for(self, topic: str, partition: int) -> int:
        t = self.topics.get(topic)
        if t is None:
            return -1
        p = t.partitions.get(partition)
        return -1 if p is None else p.leader

    def partition_info(self, topic: str, partition: int) -> PartitionInfo | None:
        t = self.topics.get(topic)
        return None if t is None else t.partitions.get(partition)

    def topic_error(self, topic: str):
        """The broker's error for topic as a KafkaError instance, or None."""
        t = self.topics.get(topic)
        if t is None or not t.error_code:
            return None
        return error_for_code(t.error_code)

    def broker(self, node_id: int) -> BrokerInfo | None:
        return self.brokers.get(node_id)
