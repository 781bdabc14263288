"""DeleteRecords (21): move a partition's log start offset forward (offset -1: the high
watermark). Offsets past the high watermark are OFFSET_OUT_OF_RANGE."""
from __future__ import annotations

import logging

from ...protocol.errors import ErrorCode, KafkaError
from ..security.checks import DELETE, denied_topics

log = logging.getLogger("gregor.broker.delete_records")

API_KEY = 21
VERSIONS = (0, 1)           # v2 is the first flexible version


def handle(broker, ctx, request) -> dict:
    rm = broker.replica_manager
    denied = denied_topics(broker, ctx, DELETE, (t["name"] for t in request["topics"]))
    topics = []
    for t in request["topics"]:
        parts = []
        for pt in t["partitions"]:
            out = {"partition_index": pt["partition_index"], "low_watermark": -1,
                   "error_code": ErrorCode.NONE}
            parts.append(out)
            if t["name"] in denied:
                out["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            p = rm.get(t["name"], pt["partition_index"])
            if p is None:
                out["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            offset = pt["offset"]
            if offset == -1:
                offset = p.high_watermark
            if offset < 0 or offset > p.high_watermark:
                out["error_code"] = ErrorCode.OFFSET_OUT_OF_RANGE
                out["low_watermark"] = p.log.log_start_offset
                continue
            try:
                if offset > p.log.log_start_offset:
                    p.log.delete_records_before(offset)
                    p.reset_after_truncation()
                    rm.notify(p)     # long polls below the new start answer now
            except KafkaError as e:
                out["error_code"] = e.code
            except Exception:
                log.exception("DeleteRecords on %s-%d failed", p.topic, p.index)
                out["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR
            out["low_watermark"] = p.log.log_start_offset
        topics.append({"name": t["name"], "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}
