"""The per-topic result loop shared by the topic admin APIs (CreateTopics, CreatePartitions):
one result per requested topic, in request order, each failing on its own."""
from __future__ import annotations

from collections import Counter
from typing import Callable

from ...protocol.errors import ErrorCode, KafkaError


def per_topic_results(broker, api_key: int, topics: list[dict],
                      apply: Callable[[dict], None]) -> list[dict]:
    """Run apply(topic) for every topic of the request and return their results. A name
    listed twice fails with INVALID_REQUEST for every entry (Kafka cannot tell which one was
    meant); a KafkaError raised by apply becomes that topic's error and is counted in the
    broker's error metrics."""
    counts = Counter(t["name"] for t in topics)
    results = []
    for t in topics:
        name = t["name"]
        res = {"name": name, "error_code": ErrorCode.NONE, "error_message": None}
        results.append(res)
        if counts[name] > 1:
            res["error_code"] = ErrorCode.INVALID_REQUEST
            res["error_message"] = f"topic {name!r} appears more than once in the request"
            continue
        try:
            apply(t)
        except KafkaError as e:
            res["error_code"] = e.code
            res["error_message"] = e.message
            broker.metrics.error(api_key, e.name)
    return results
