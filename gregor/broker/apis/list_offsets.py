"""ListOffsets (2): offsets by time: earliest (-2), latest (-1) or the first record at or after
a timestamp. v0 answers with a list of offsets (old_style_offsets) instead of one offset and
timestamp. "Latest" is the high watermark: the next offset a consumer will see; for
read_committed requests (v2+ isolation_level 1) it is the last stable offset, where such a
consumer stops.

A leader elected moments ago knows the high watermark only from its last fetch as a follower
until its followers fetch from it: below the start of its epoch, an answer from it could go
backwards from what the old leader said. As Kafka (KIP-207), a client's (v1+, replica_id -1)
"latest" or timestamp lookup is then answered OFFSET_NOT_AVAILABLE, which clients retry.
"""
from __future__ import annotations

import logging

from ...protocol.errors import ErrorCode, KafkaError
from ..security.checks import DESCRIBE, denied_topics

log = logging.getLogger("gregor.broker.list_offsets")

API_KEY = 2
VERSIONS = (0, 5)           # v6 is the first flexible version
LATEST = -1
EARLIEST = -2


def handle(broker, ctx, request) -> dict:
    version = ctx.api_version
    rm = broker.replica_manager
    read_committed = request.get("isolation_level", 0) == 1
    client = request.get("replica_id", -1) == -1       # not a follower's or a debug request
    denied = denied_topics(broker, ctx, DESCRIBE, (t["name"] for t in request["topics"]))
    topics = []
    for t in request["topics"]:
        parts = []
        for pt in t["partitions"]:
            out = {"partition_index": pt["partition_index"], "error_code": ErrorCode.NONE,
                   "old_style_offsets": [], "timestamp": -1, "offset": -1,
                   "leader_epoch": -1}
            parts.append(out)
            if t["name"] in denied:
                out["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            p = rm.get(t["name"], pt["partition_index"])
            if broker.cluster is not None and (p is None or not p.is_leader):
                out["error_code"] = broker.cluster.partition_error(t["name"],
                                                                   pt["partition_index"])
                continue
            if p is None:
                out["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            out["leader_epoch"] = p.leader_epoch
            ts = pt["timestamp"]
            if (ts == LATEST or ts >= 0) and version >= 1 and client and \
                    p.log.leader_epochs.start_offset_of_latest() > p.high_watermark:
                out["error_code"] = ErrorCode.OFFSET_NOT_AVAILABLE
                continue
            try:
                if ts == LATEST:
                    offset = p.last_stable_offset if read_committed else p.high_watermark
                    found_ts = -1
                elif ts == EARLIEST:
                    offset, found_ts = p.log.log_start_offset, -1
                elif ts < 0:
                    out["error_code"] = ErrorCode.UNSUPPORTED_VERSION if ts == -3 else \
                        ErrorCode.INVALID_REQUEST
                    continue
                else:
                    offset, found_ts = offset_for_timestamp(p, ts)
            except KafkaError as e:
                out["error_code"] = e.code
                continue
            except Exception:
                log.exception("ListOffsets on %s-%d failed", p.topic, p.index)
                out["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR
                continue
            if version == 0:
                # v0 returns up to max_num_offsets offsets, newest first; we know the one.
                out["old_style_offsets"] = [offset] if offset >= 0 and \
                    pt.get("max_num_offsets", 1) > 0 else []
            else:
                out["offset"] = offset
                out["timestamp"] = found_ts
        topics.append({"name": t["name"], "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}


def offset_for_timestamp(p, ts: int) -> tuple[int, int]:
    """(offset, timestamp) of the first record at or after ts below the high watermark, or
    (-1, -1). The log finds the batch; the one batch is decoded to find the exact record."""
    found = p.log.offset_for_timestamp(ts)
    if found is None or found[0] >= p.high_watermark:
        return -1, -1
    data = p.log.read(found[0], 1, max_offset=p.high_watermark, min_one_batch=True)
    if data:
        from ...protocol.records.batch import decode_batch
        start = p.log.log_start_offset
        for r in decode_batch(data, 0).records:
            if r.timestamp >= ts and r.offset >= start:
                return r.offset, r.timestamp
    return found
