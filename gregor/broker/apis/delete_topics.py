"""DeleteTopics (20): delete topics and their data (two-phase, crash-safe: see topics.py)."""
from __future__ import annotations

from ...protocol.errors import ErrorCode, KafkaError

API_KEY = 20
VERSIONS = (0, 3)           # v4 is the first flexible version


def handle(broker, ctx, request) -> dict:
    results = []
    for name in request["topic_names"]:
        res = {"name": name, "error_code": ErrorCode.NONE, "error_message": None}
        results.append(res)
        try:
            broker.delete_topic(name)
        except KafkaError as e:
            res["error_code"] = e.code
            res["error_message"] = e.message
            broker.metrics.error(API_KEY, e.name)
    return {"throttle_time_ms": 0, "responses": results}
