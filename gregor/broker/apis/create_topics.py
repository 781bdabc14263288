"""CreateTopics (19): create topics with a partition count, replication factor 1 and configs.

A replication factor above the number of live brokers (1) is INVALID_REPLICATION_FACTOR;
num_partitions / replication_factor of -1 (v4+) take the broker defaults; validate_only checks
everything and creates nothing. A name listed twice fails with INVALID_REQUEST for both.
"""
from __future__ import annotations

from collections import Counter

from ...protocol.errors import ErrorCode, KafkaError

API_KEY = 19
VERSIONS = (0, 4)           # v5 is the first flexible version


def handle(broker, ctx, request) -> dict:
    validate_only = request.get("validate_only", False)
    counts = Counter(t["name"] for t in request["topics"])
    results = []
    for t in request["topics"]:
        name = t["name"]
        res = {"name": name, "error_code": ErrorCode.NONE, "error_message": None}
        results.append(res)
        if counts[name] > 1:
            res["error_code"] = ErrorCode.INVALID_REQUEST
            res["error_message"] = f"topic {name!r} appears more than once in the request"
            continue
        try:
            configs = {}
            for c in t["configs"]:
                configs[c["name"]] = c["value"]
            partitions, clean = broker.check_new_topic(
                name, t["num_partitions"], t["replication_factor"], configs, t["assignments"])
            if not validate_only:
                broker.create_topic(name, partitions, clean)
        except KafkaError as e:
            res["error_code"] = e.code
            res["error_message"] = e.message
            broker.metrics.error(API_KEY, e.name)
    return {"throttle_time_ms": 0, "topics": results}
