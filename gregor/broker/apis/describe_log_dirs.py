"""DescribeLogDirs (35): the broker's log directory and, per topic and partition hosted here
(leader or follower), the log's size in bytes and how far its end is behind the partition's
high watermark (KIP-113); v4 adds the file system's total and usable bytes (KIP-827).

As Kafka's KafkaApis: the principal needs DESCRIBE on the CLUSTER (the ACL authorizer,
security/checks.py), else the answer is CLUSTER_AUTHORIZATION_FAILED (v3+; before v3 only
the empty result list says so). A null
topics list asks for every partition; a named partition not hosted here is left out, as
Kafka does. gregor has one log directory and no future (being moved) replicas, so
is_future_key is always false. Kafka also lists the directory's other topics with empty
partition lists when topics are named; gregor lists only topics with partitions to report.
"""
from __future__ import annotations

import logging
import shutil

from ...protocol.errors import ErrorCode
from ..security.checks import DESCRIBE, cluster_allowed

log = logging.getLogger("gregor.broker.describe_log_dirs")

API_KEY = 35
VERSIONS = (0, 4)


def handle(broker, ctx, request) -> dict:
    if not cluster_allowed(broker, ctx, DESCRIBE):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "results": []}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "results": [describe_dir(broker, request.get("topics"))]}


def describe_dir(broker, topics) -> dict:
    """The one log directory's entry; topics: the request's list, or None for everything."""
    path = str(broker.data_dir.resolve())
    try:
        usage = shutil.disk_usage(path)
    except OSError as e:
        log.error("log directory %s cannot be read: %s", path, e)
        return {"error_code": ErrorCode.KAFKA_STORAGE_ERROR, "log_dir": path, "topics": [],
                "total_bytes": -1, "usable_bytes": -1}
    if topics is None:
        wanted = None
    else:
        wanted = {(t["topic"], i) for t in topics for i in t["partitions"]}
    by_topic: dict[str, list] = {}
    for (topic, index), p in sorted(broker.replica_manager.partitions.items()):
        if wanted is not None and (topic, index) not in wanted:
            continue
        by_topic.setdefault(topic, []).append({
            "partition_index": index, "partition_size": p.log.size_bytes,
            "offset_lag": p.log_end_offset_lag(), "is_future_key": False})
    # usable_bytes is what statvfs gives unprivileged writers (f_bavail), as Java's
    # FileStore.getUsableSpace; total_bytes the file system's size.
    return {"error_code": ErrorCode.NONE, "log_dir": path,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
            "total_bytes": usage.total, "usable_bytes": usage.free}
