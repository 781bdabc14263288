"""The cluster as the console shows it: brokers, topics, partitions with their offsets and sizes,
configs, and the topic changes an operator makes. Plain dicts out (the /api/ JSON is the same
data the templates render), every blocking call on the ClientPool's threads.

Partition sizes come from DescribeLogDirs when the brokers serve it (Kafka and gregor do) and
the console's principal may use it (DESCRIBE on the cluster), else from a broker's Prometheus
endpoint (--metrics-url; gregor's `gregor_partition_log_size_bytes`), else they are left out.
"""
from __future__ import annotations

import logging
import urllib.request

from ..client.admin import NewTopic
from ..protocol.errors import KafkaError
from .workers import ClientPool

log = logging.getLogger("gregor.console")

_METRICS_TIMEOUT_S = 3.0
_SIZE_METRIC = "gregor_partition_log_size_bytes"


def _partition_rows(desc, starts, ends, sizes) -> list[dict]:
    rows = []
    for p in desc.partitions:
        tp = (desc.name, p.partition)
        lo = starts.get(tp)
        hi = ends.get(tp)
        rows.append({
            "partition": p.partition, "leader": p.leader, "replicas": p.replicas,
            "isr": p.isr, "offline_replicas": p.offline_replicas,
            "earliest": lo.offset if lo else None, "latest": hi.offset if hi else None,
            "messages": (hi.offset - lo.offset) if lo and hi else None,
            "size": sizes.get(tp),
            "under_replicated": len(p.isr) < len(p.replicas), "offline": p.leader < 0})
    return rows


def read_metrics_sizes(url: str) -> dict[tuple[str, int], int]:
    """{(topic, partition): bytes} from a Prometheus text endpoint."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url, timeout=_METRICS_TIMEOUT_S) as resp:  # noqa: S310
        text = resp.read(32 * 1024 * 1024).decode("utf-8", "replace")
    out = {}
    for fam in text_string_to_metric_families(text):
        if fam.name != _SIZE_METRIC:
            continue
        for s in fam.samples:
            try:
                out[(s.labels["topic"], int(s.labels["partition"]))] = int(s.value)
            except (KeyError, ValueError):
                continue
    return out


class ClusterModel:
    def __init__(self, pool: ClientPool):
        self.pool = pool
        self.settings = pool.settings
        self._log_dirs_supported: bool | None = None

    # -- sizes --------------------------------------------------------------------------------
    def _sizes(self, admin, partitions=None) -> tuple[dict, str | None]:
        """({(topic, partition): bytes}, where they came from); partitions: only these
        [(topic, partition)] (all when None)."""
        if self._log_dirs_supported is None:
            self._log_dirs_supported = admin.supports("DescribeLogDirs")
        if self._log_dirs_supported:
            sizes: dict = {}
            try:
                found = admin.describe_log_dirs(partitions=partitions)
            except KafkaError as e:
                # e.g. CLUSTER_AUTHORIZATION_FAILED: the page shows without sizes (or with
                # the metrics' ones) rather than failing
                log.info("no partition sizes from DescribeLogDirs: %s", e)
            else:
                for dirs in found.values():
                    for d in dirs:
                        for tp, n in d.partition_sizes.items():
                            sizes[tp] = max(n, sizes.get(tp, 0))   # the largest replica's
                return sizes, "DescribeLogDirs"
        if self.settings.metrics_url:
            try:
                return read_metrics_sizes(self.settings.metrics_url), "metrics"
            except (OSError, ValueError):
                return {}, None
        return {}, None

    # -- pages --------------------------------------------------------------------------------
    async def cluster(self) -> dict:
        def read(admin):
            c = admin.describe_cluster()
            topics = admin.list_topics(include_internal=True)
            return c, topics
        c, topics = await self.pool.admin(read)
        led: dict[int, int] = {}
        under, offline, partitions, internal = [], [], 0, 0
        for t in topics.values():
            for p in t.partitions:
                partitions += 1
                internal += t.internal
                led[p.leader] = led.get(p.leader, 0) + 1
                if p.leader < 0:
                    offline.append({"topic": t.name, "partition": p.partition})
                elif len(p.isr) < len(p.replicas):
                    under.append({"topic": t.name, "partition": p.partition,
                                  "replicas": p.replicas, "isr": p.isr})
        return {
            "cluster_id": c.cluster_id, "controller_id": c.controller_id,
            "brokers": [{"id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack,
                         "controller": b.node_id == c.controller_id,
                         "leader_partitions": led.get(b.node_id, 0)}
                        for b in sorted(c.brokers, key=lambda b: b.node_id)],
            "topic_count": sum(1 for t in topics.values() if not t.internal),
            "internal_topic_count": sum(1 for t in topics.values() if t.internal),
            "partition_count": partitions,
            # __consumer_offsets alone has 50: a total that hides them misleads
            "internal_partition_count": internal,
            "under_replicated": under, "offline": offline,
        }

    async def topics(self) -> dict:
        def read(admin):
            topics = admin.list_topics(include_internal=True)
            tps = [(t.name, p.partition) for t in topics.values() for p in t.partitions
                   if p.leader >= 0]
            starts = admin.list_offsets({tp: "earliest" for tp in tps}) if tps else {}
            ends = admin.list_offsets({tp: "latest" for tp in tps}) if tps else {}
            sizes, source = self._sizes(admin)
            return topics, starts, ends, sizes, source
        topics, starts, ends, sizes, source = await self.pool.admin(read)
        out = []
        for t in topics.values():
            rows = _partition_rows(t, starts, ends, sizes)
            out.append({
                "name": t.name, "internal": t.internal, "partitions": len(rows),
                "replication_factor": t.replication_factor,
                "messages": sum(r["messages"] or 0 for r in rows),
                "size": sum(r["size"] for r in rows) if source and rows and all(
                    r["size"] is not None for r in rows) else None,
                "under_replicated": sum(r["under_replicated"] for r in rows),
                "offline": sum(r["offline"] for r in rows)})
        return {"topics": out, "size_source": source}

    async def topic(self, name: str) -> dict:
        def read(admin):
            d = admin.describe_topics([name])[name]
            tps = [(name, p.partition) for p in d.partitions if p.leader >= 0]
            starts = admin.list_offsets({tp: "earliest" for tp in tps}) if tps else {}
            ends = admin.list_offsets({tp: "latest" for tp in tps}) if tps else {}
            configs = admin.describe_configs([name])[name]
            sizes, source = self._sizes(admin, [(name, p.partition) for p in d.partitions])
            return d, starts, ends, configs, sizes, source
        d, starts, ends, configs, sizes, source = await self.pool.admin(read)
        return {
            "name": name, "internal": d.internal,
            "topic_id": d.topic_id.hex() if isinstance(d.topic_id, (bytes, bytearray))
            else (str(d.topic_id) if d.topic_id else None),
            "replication_factor": d.replication_factor,
            "partitions": _partition_rows(d, starts, ends, sizes), "size_source": source,
            "configs": [{"name": c.name, "value": None if c.is_sensitive else c.value,
                         "default": c.is_default, "read_only": c.read_only,
                         "sensitive": c.is_sensitive, "source": c.source}
                        for c in sorted(configs.values(), key=lambda c: c.name)],
        }

    async def partitions_of(self, name: str) -> list[int]:
        d = await self.pool.admin(lambda a: a.describe_topics([name])[name])
        return [p.partition for p in d.partitions]

    # -- changes ------------------------------------------------------------------------------
    async def create_topic(self, name: str, partitions: int, replication_factor: int,
                           config: dict) -> None:
        await self.pool.admin(lambda a: a.create_topics(
            [NewTopic(name, partitions, replication_factor, config)]))

    async def delete_topic(self, name: str) -> None:
        await self.pool.admin(lambda a: a.delete_topics([name]))

    async def add_partitions(self, name: str, total: int) -> None:
        await self.pool.admin(lambda a: a.create_partitions({name: total}))

    async def alter_configs(self, name: str, changes: dict) -> None:
        """{config: value, or None to go back to the default}."""
        await self.pool.admin(lambda a: a.alter_configs({name: changes}))

    async def health_check(self) -> dict:
        """A cheap metadata round trip; the pool records the outcome."""
        try:
            await self.pool.admin(lambda a: a.describe_cluster(timeout=2.0))
        except Exception:
            pass
        return self.pool.health.as_dict()
