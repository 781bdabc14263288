"""The per-topic result loops shared by the topic admin APIs (CreateTopics, CreatePartitions):
one result per requested topic, in request order, each failing on its own; on a single node
the work is done at once, in a cluster by the controller, answered when it is done."""
from __future__ import annotations

from collections import Counter
from typing import Callable

from ...protocol.errors import ErrorCode, KafkaError
from ._txn_common import respond_later


def per_topic_results(broker, api_key: int, topics: list[dict],
                      apply: Callable[[dict], None],
                      denied: dict[str, KafkaError] | None = None) -> list[dict]:
    """Run apply(topic) for every topic of the request and return their results. A name
    listed twice fails with INVALID_REQUEST for every entry (Kafka cannot tell which one was
    meant); a name in `denied` (not authorized) fails with its error without apply; a
    KafkaError raised by apply becomes that topic's error and is counted in the broker's
    error metrics."""
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
            if denied and name in denied:
                raise denied[name]
            extra = apply(t)
            if extra:
                res.update(extra)
        except KafkaError as e:
            res["error_code"] = e.code
            res["error_message"] = e.message
            broker.metrics.error(api_key, e.name)
    return results


def controller_results(broker, api_key: int, topics: list[dict], run, results_key: str,
                       denied: dict[str, KafkaError] | None = None, details=None,
                       throttle=None):
    """In a cluster: run(unique_topics) is the controller's coroutine returning
    {name: KafkaError or None} (None for everything when it timed out); the response lists one
    result per requested topic under results_key, duplicates refused as on a single node and
    the names in `denied` (not authorized) with their error, never given to run.
    details(topic) adds fields to a successful result; throttle() gives throttle_time_ms."""
    counts = Counter(t["name"] for t in topics)
    denied = denied or {}
    unique = [t for t in topics if counts[t["name"]] == 1 and t["name"] not in denied]

    def build(errors) -> dict:
        results = []
        for t in topics:
            res = {"name": t["name"], "error_code": ErrorCode.NONE, "error_message": None}
            if counts[t["name"]] > 1:
                res["error_code"] = ErrorCode.INVALID_REQUEST
                res["error_message"] = f"topic {t['name']!r} appears more than once"
            elif t["name"] in denied:
                res["error_code"] = denied[t["name"]].code
                res["error_message"] = denied[t["name"]].message
            elif errors is None:
                res["error_code"] = ErrorCode.REQUEST_TIMED_OUT
            elif errors.get(t["name"]) is not None:
                e = errors[t["name"]]
                res["error_code"], res["error_message"] = e.code, e.message
                broker.metrics.error(api_key, e.name)
            elif details is not None:
                res.update(details(t) or {})
            results.append(res)
        return {"throttle_time_ms": throttle() if throttle else 0, results_key: results}
    return respond_later(run(unique) if unique else _nothing(), build)


async def _nothing() -> dict:
    return {}
