"""Topic metadata (name, id, partition count, configs), persisted in the data directory.

The store is one JSON file, `gregor-topics.json`, replaced atomically (write a temporary file,
fsync it, rename it over the old one, fsync the directory) on every change, so a crash leaves
either the old or the new version. Topic names are restricted to [a-zA-Z0-9._-], so no
partition directory (`<topic>-<n>`) can clash with the file.

Deletion is two-phase: the topic is first marked `deleting` and persisted, then its partition
directories are removed, then the entry is dropped. A crash in between finishes the deletion at
the next start. Partition directories that the store does not know (its file lost, or written
by an older version) are adopted, never deleted: data is only removed on an explicit request.
"""
from __future__ import annotations

import base64
import json
import logging
import os
import re
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("gregor.broker.topics")

STORE_FILE = "gregor-topics.json"
META_FILE = "meta.properties"
# Kafka's limit: 249 characters, so that "<topic>-<partition>" and suffixes fit a file name.
MAX_TOPIC_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
_PARTITION_DIR = re.compile(r"^(?P<topic>[a-zA-Z0-9._-]+)-(?P<partition>\d+)$")


def topic_name_error(name: str | None) -> str | None:
    """Why name is not a legal topic name, or None if it is."""
    if not name:
        return "topic name is empty"
    if name in (".", ".."):
        return f"topic name {name!r} is not allowed"
    if len(name) > MAX_TOPIC_LENGTH:
        return f"topic name is {len(name)} characters long; the limit is {MAX_TOPIC_LENGTH}"
    if not _LEGAL.match(name):
        return (f"topic name {name!r} contains characters other than ASCII letters, digits, "
                "'.', '_' and '-'")
    return None


def new_uuid_string() -> str:
    """A random id in Kafka's textual form (url-safe base64 of 16 bytes, no padding)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


@dataclass
class TopicInfo:
    name: str
    topic_id: str           # 32 hex characters (16 bytes)
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)   # explicit topic configs only
    created_ms: int = 0
    deleting: bool = False

    @property
    def topic_id_bytes(self) -> bytes:
        return bytes.fromhex(self.topic_id)

    def to_json(self) -> dict:
        return {"name": self.name, "topic_id": self.topic_id, "partitions": self.partitions,
                "configs": self.configs, "created_ms": self.created_ms,
                "deleting": self.deleting}

    @classmethod
    def from_json(cls, d: dict) -> "TopicInfo":
        return cls(d["name"], d["topic_id"], int(d["partitions"]), dict(d.get("configs") or {}),
                   int(d.get("created_ms", 0)), bool(d.get("deleting", False)))


def write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class TopicStore:
    def __init__(self, data_dir: Path):
        self.data_dir = Path(data_dir)
        self.path = self.data_dir / STORE_FILE
        self.topics: dict[str, TopicInfo] = {}

    def load(self) -> None:
        """Read the store and reconcile it with the partition directories on disk."""
        if self.path.exists():
            try:
                doc = json.loads(self.path.read_text())
                for d in doc.get("topics", []):
                    t = TopicInfo.from_json(d)
                    self.topics[t.name] = t
            except (ValueError, KeyError, TypeError) as e:
                raise RuntimeError(f"{self.path} is damaged ({e}); restore it from a backup or "
                                   "move it away to rebuild topics from the partition "
                                   "directories with default configs") from None
        adopted: dict[str, int] = {}
        for entry in self.data_dir.iterdir():
            m = _PARTITION_DIR.match(entry.name)
            if not m or not entry.is_dir():
                continue
            name, p = m.group("topic"), int(m.group("partition"))
            t = self.topics.get(name)
            if t is None or (not t.deleting and p >= t.partitions):
                adopted[name] = max(adopted.get(name, 0), p + 1)
        for name, count in adopted.items():
            t = self.topics.get(name)
            if t is None:
                log.warning("adopting partition directories of topic %r (%d partitions) that "
                            "the topic store did not list; its configs are the defaults",
                            name, count)
                self.topics[name] = TopicInfo(name, uuid.uuid4().hex, count, {},
                                              int(time.time() * 1000))
            else:
                log.warning("topic %r has partition directories up to %d; raising its "
                            "partition count from %d", name, count - 1, t.partitions)
                t.partitions = count
        if adopted:
            self.save()

    def save(self) -> None:
        doc = {"version": 1, "topics": [t.to_json() for t in sorted(self.topics.values(),
                                                                       key=lambda t: t.name)]}
        write_atomically(self.path, json.dumps(doc, indent=1).encode())

    def get(self, name: str) -> TopicInfo | None:
        t = self.topics.get(name)
        return None if t is None or t.deleting else t

    def live(self) -> list[TopicInfo]:
        return [t for t in self.topics.values() if not t.deleting]

    def add(self, name: str, partitions: int, configs: dict[str, str]) -> TopicInfo:
        t = TopicInfo(name, uuid.uuid4().hex, partitions, dict(configs), int(time.time() * 1000))
        self.topics[name] = t
        self.save()
        return t

    def set_partitions(self, name: str, count: int) -> None:
        self.topics[name].partitions = count
        self.save()

    def set_configs(self, name: str, configs: dict[str, str]) -> None:
        self.topics[name].configs = dict(configs)
        self.save()

    def mark_deleting(self, name: str) -> None:
        self.topics[name].deleting = True
        self.save()

    def remove(self, name: str) -> None:
        self.topics.pop(name, None)
        self.save()


def read_meta(data_dir: Path) -> dict[str, str]:
    path = Path(data_dir) / META_FILE
    out: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                k, v = line.split("=", 1)
                out[k.strip()] = v.strip()
    return out


def ensure_meta(data_dir: Path, node_id: int, cluster_id: str | None) -> str:
    """Read or create meta.properties; returns the cluster id. A data directory belongs to
    one node: starting it under another id is refused."""
    meta = read_meta(data_dir)
    if meta:
        stored_node = meta.get("node.id")
        if stored_node is not None and int(stored_node) != node_id:
            raise RuntimeError(f"{data_dir} belongs to broker {stored_node}, not {node_id}; "
                               f"start with --broker-id {stored_node} or use another directory")
        stored_cluster = meta.get("cluster.id")
        if cluster_id and stored_cluster and cluster_id != stored_cluster:
            raise RuntimeError(f"{data_dir} belongs to cluster {stored_cluster}, not "
                               f"{cluster_id}")
        if stored_cluster:
            return stored_cluster
    cluster_id = cluster_id or new_uuid_string()
    text = (f"# written by gregor broker\nversion=1\nnode.id={node_id}\n"
            f"cluster.id={cluster_id}\n")
    write_atomically(Path(data_dir) / META_FILE, text.encode())
    return cluster_id
