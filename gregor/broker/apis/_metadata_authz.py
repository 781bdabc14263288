"""Metadata under an authorizer (Kafka's KafkaApis.handleTopicMetadataRequest):

- a request for all topics silently leaves out the topics the principal may not DESCRIBE
  (denials not logged: the principal asked for nothing in particular);
- a topic asked for by name that the principal may not DESCRIBE answers
  TOPIC_AUTHORIZATION_FAILED, whether it exists or not (existence is never disclosed), with
  a zero topic id; asked for by id (v12), the answer keeps the id (ids are not secret) and
  drops the name;
- a topic that would be auto-created needs CREATE on the cluster or on the topic, else it
  answers TOPIC_AUTHORIZATION_FAILED;
- KIP-430: topic_authorized_operations (v8+) and cluster_authorized_operations (v8-10) when
  the request asks for them (computed without an authorizer too: every supported operation).

The topics that pass are described by the usual code (single node or cluster), unchanged.
"""
from __future__ import annotations

from typing import Callable

from ...protocol.errors import ErrorCode
from ..security.checks import (DESCRIBE, NO_AUTHORIZED_OPS, TOPIC, allowed_names,
                               authorized_operations, cluster_authorized_operations,
                               may_create_topic)
from ..topics import topic_name_error

ZERO_ID = bytes(16)


def authorized_metadata(broker, ctx, version: int, request: dict,
                        describe: Callable[[dict], dict], exists: Callable[[str], bool],
                        ids: Callable[[], dict]) -> dict:
    """describe(request) is the unsecured Metadata answer; exists(name) and ids() (topic id
    -> name) read the same view."""
    requested = request["topics"]
    if requested is None or (version == 0 and not requested):
        body = describe(request)
        names = [t["name"] for t in body["topics"]]
        ok = allowed_names(broker, ctx, DESCRIBE, TOPIC, names, log_denied=False)
        body["topics"] = [t for t in body["topics"] if t["name"] in ok]
        return body
    auto_create = bool(broker.config.get("auto.create.topics.enable")) and \
        (version < 4 or request.get("allow_auto_topic_creation", True))
    by_id = None
    resolved = []                         # (request entry, name or None, asked by id)
    for t in requested:
        name, tid = t.get("name"), t.get("topic_id") or ZERO_ID
        asked_by_id = name is None and tid != ZERO_ID
        if asked_by_id:
            by_id = ids() if by_id is None else by_id
            name = by_id.get(tid)
        resolved.append((t, name, asked_by_id))
    ok = allowed_names(broker, ctx, DESCRIBE, TOPIC,
                       [n for _, n, _ in resolved if isinstance(n, str)])
    answers: list = []
    passed = []
    for t, name, asked_by_id in resolved:
        if not isinstance(name, str):     # unknown id, null name: the usual answer
            passed.append(t)
            answers.append(None)
        elif name not in ok:
            answers.append(_denied(None if asked_by_id else name,
                                   t.get("topic_id") if asked_by_id else ZERO_ID))
        elif auto_create and not topic_name_error(name) and not exists(name) and \
                not may_create_topic(broker, ctx, name):
            answers.append(_denied(name, ZERO_ID))
        else:
            passed.append(t)
            answers.append(None)
    body = describe({**request, "topics": passed})
    described = iter(body["topics"])
    body["topics"] = [a if a is not None else next(described) for a in answers]
    return body


def _denied(name: str | None, topic_id: bytes) -> dict:
    return {"error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "name": name,
            "topic_id": topic_id, "is_internal": False, "partitions": [],
            "topic_authorized_operations": NO_AUTHORIZED_OPS}


def add_authorized_operations(broker, ctx, version: int, request: dict, body: dict) -> None:
    if version < 8:
        return
    if version <= 10 and request.get("include_cluster_authorized_operations"):
        body["cluster_authorized_operations"] = cluster_authorized_operations(broker, ctx)
    if request.get("include_topic_authorized_operations"):
        for t in body["topics"]:
            if t["name"] is not None and t["error_code"] != ErrorCode.TOPIC_AUTHORIZATION_FAILED:
                t["topic_authorized_operations"] = authorized_operations(broker, ctx, TOPIC,
                                                                         t["name"])
