"""Where each API's request and response name their topics and partitions, so that an injected
error answers some of them while the others are handled as usual.

A faulted partition must not be applied (no record appended, no offset committed): the
client's retry is what makes it succeed, as with a real broker that answered an error. So a
request with faulted partitions is rewritten without them, handled, and the handler's response
gets one error entry per faulted partition merged in. A request whose every partition is
faulted is not handled at all (a Fetch would otherwise long-poll for nothing).

Whole-request errors are answered as Kafka answers them: in the top-level error_code when the
response has one at that version, else in every entry the request names (each partition of a
Produce, each group of a DescribeGroups).

Tables are written per API from the schema in gregor/protocol/messages (field names are
gregor's snake_case spellings of Kafka's).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..protocol import messages


@dataclass(frozen=True)
class Level:
    """An array of entries in the request and its answer in the response, matched by key."""
    req: str                    # request array
    req_key: str | None         # key field of a request entry (None: the entries are the keys)
    rsp: str                    # response array
    rsp_key: str                # key field of a response entry


@dataclass(frozen=True)
class Table:
    topics: Level
    parts: Level | None = None          # None: the topic is the unit (CreateTopics)
    outer: Level | None = None          # groups (OffsetFetch v8+), transactions, markers
    error: str = "error_code"           # error field of the innermost response entry
    extra: dict = field(default_factory=dict)   # other fields of an error entry
    whole: str = "entries"              # whole-request errors: "entries" or "top" (error_code)


def _lvl(req, req_key, rsp, rsp_key) -> Level:
    return Level(req, req_key, rsp, rsp_key)


_NAMED_PARTS = _lvl("partitions", "partition_index", "partitions", "partition_index")
_TOPICS = _lvl("topics", "name", "topics", "name")

_PRODUCE = Table(_lvl("topic_data", "name", "responses", "name"),
                 _lvl("partition_data", "index", "partition_responses", "index"),
                 extra={"base_offset": -1, "log_append_time_ms": -1, "log_start_offset": -1})
_FETCH_EXTRA = {"high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1,
                "records": b""}
_FETCH = Table(_lvl("topics", "topic", "responses", "topic"),
               _lvl("partitions", "partition", "partitions", "partition_index"),
               extra=_FETCH_EXTRA)
_FETCH_IDS = Table(_lvl("topics", "topic_id", "responses", "topic_id"),
                   _lvl("partitions", "partition", "partitions", "partition_index"),
                   extra=_FETCH_EXTRA)
_LIST_OFFSETS = Table(_TOPICS, _NAMED_PARTS,
                      extra={"timestamp": -1, "offset": -1, "old_style_offsets": []})
_COMMIT = Table(_TOPICS, _NAMED_PARTS)
_DELETE_RECORDS = Table(_TOPICS, _NAMED_PARTS, extra={"low_watermark": -1})
_OFFSET_DELETE = Table(_TOPICS, _NAMED_PARTS, whole="top")
_EPOCHS = Table(_lvl("topics", "topic", "topics", "topic"),
                _lvl("partitions", "partition", "partitions", "partition"),
                extra={"leader_epoch": -1, "end_offset": -1})
_INDEXES = _lvl("partition_indexes", None, "partitions", "partition_index")
_PRODUCERS = Table(_TOPICS, _INDEXES)
_FETCH_OFFSETS_V0 = Table(_TOPICS, _INDEXES, extra={"committed_offset": -1, "metadata": ""})
_FETCH_OFFSETS_V2 = Table(_TOPICS, _INDEXES, extra={"committed_offset": -1, "metadata": ""},
                          whole="top")
_FETCH_OFFSETS_V8 = Table(_TOPICS, _INDEXES, extra={"committed_offset": -1, "metadata": ""},
                          outer=_lvl("groups", "group_id", "groups", "group_id"))
_TXN_PARTS = _lvl("partitions", None, "results_by_partition", "partition_index")
_ADD_PARTITIONS_V0 = Table(
    _lvl("v3_and_below_topics", "name", "results_by_topic_v3_and_below", "name"), _TXN_PARTS,
    error="partition_error_code")
_ADD_PARTITIONS_V4 = Table(
    _lvl("topics", "name", "topic_results", "name"), _TXN_PARTS, error="partition_error_code",
    outer=_lvl("transactions", "transactional_id", "results_by_transaction",
               "transactional_id"), whole="top")
_MARKERS = Table(_TOPICS, _INDEXES,
                 outer=_lvl("markers", "producer_id", "markers", "producer_id"))
_CREATE_TOPICS = Table(_TOPICS, extra={"num_partitions": -1, "replication_factor": -1})
_DELETE_TOPICS_V0 = Table(_lvl("topic_names", None, "responses", "name"))
_DELETE_TOPICS_V6 = Table(_lvl("topics", "name", "responses", "name"))
_CREATE_PARTITIONS = Table(_lvl("topics", "name", "results", "name"))

_TABLES: dict[int, Callable[[int], Table]] = {
    0: lambda v: _PRODUCE,
    1: lambda v: _FETCH_IDS if v >= 13 else _FETCH,
    2: lambda v: _LIST_OFFSETS,
    8: lambda v: _COMMIT,
    9: lambda v: _FETCH_OFFSETS_V8 if v >= 8 else _FETCH_OFFSETS_V2 if v >= 2
    else _FETCH_OFFSETS_V0,
    19: lambda v: _CREATE_TOPICS,
    20: lambda v: _DELETE_TOPICS_V6 if v >= 6 else _DELETE_TOPICS_V0,
    21: lambda v: _DELETE_RECORDS,
    23: lambda v: _EPOCHS,
    24: lambda v: _ADD_PARTITIONS_V4 if v >= 4 else _ADD_PARTITIONS_V0,
    27: lambda v: _MARKERS,
    28: lambda v: _COMMIT,
    37: lambda v: _CREATE_PARTITIONS,
    47: lambda v: _OFFSET_DELETE,
    61: lambda v: _PRODUCERS,
}

METADATA = 3
FETCH = 1
PRODUCE = 0


def table(api_key: int, version: int) -> Table | None:
    make = _TABLES.get(api_key)
    return make(version) if make is not None else None


def scoped_apis() -> list[str]:
    """APIs whose faults can name a topic (and partition)."""
    return sorted(messages.APIS[k].name for k in (*_TABLES, METADATA) if k in messages.APIS)


def partition_scoped(api_key: int) -> bool:
    """Whether a fault on this API can name a partition (not only a topic)."""
    if api_key == METADATA:
        return True
    t = _TABLES.get(api_key)
    return t is not None and t(99).parts is not None and t(0).parts is not None


# -- reading the request ---------------------------------------------------------------------

Key = tuple            # (outer key or None, topic key, partition or None)


def entries(t: Table, body: dict, topic_name: Callable[[Any], str | None]):
    """Yield (key, topic name, partition) for every partition (or topic) the request names."""
    for outer_key, topics in _outer(t, body):
        for entry in topics or ():
            tkey = entry if t.topics.req_key is None else entry[t.topics.req_key]
            name = topic_name(tkey)
            if t.parts is None:
                yield (outer_key, tkey, None), name, None
                continue
            for p in entry[t.parts.req] or ():
                index = p if t.parts.req_key is None else p[t.parts.req_key]
                yield (outer_key, tkey, index), name, index


def _outer(t: Table, body: dict):
    if t.outer is None:
        yield None, body.get(t.topics.req)
        return
    for o in body.get(t.outer.req) or ():
        yield o[t.outer.req_key], o.get(t.topics.req)


def without(t: Table, body: dict, faulted) -> tuple[dict, bool]:
    """(a copy of body without the faulted entries, whether anything is left to handle)."""
    left = False

    def keep_topics(outer_key, topics):
        nonlocal left
        if topics is None:
            return None
        out = []
        for entry in topics:
            tkey = entry if t.topics.req_key is None else entry[t.topics.req_key]
            if t.parts is None:
                if (outer_key, tkey, None) not in faulted:
                    out.append(entry)
                    left = True
                continue
            parts = []
            for p in entry[t.parts.req] or ():
                index = p if t.parts.req_key is None else p[t.parts.req_key]
                if (outer_key, tkey, index) not in faulted:
                    parts.append(p)
            if parts:
                out.append({**entry, t.parts.req: parts})
                left = True
        return out

    copy = dict(body)
    if t.outer is None:
        copy[t.topics.req] = keep_topics(None, body.get(t.topics.req))
    else:
        outers = []
        for o in body.get(t.outer.req) or ():
            topics = keep_topics(o[t.outer.req_key], o.get(t.topics.req))
            if topics is None or topics:
                outers.append({**o, t.topics.req: topics})
        copy[t.outer.req] = outers
    return copy, left


# -- writing the response --------------------------------------------------------------------

def merge(t: Table, response: dict, faulted: dict) -> dict:
    """Add an error entry for each faulted (outer, topic, partition) key to the response."""
    for (outer_key, tkey, index), code in faulted.items():
        holder = response
        if t.outer is not None:
            holder = _find_or_add(response, t.outer.rsp, t.outer.rsp_key, outer_key,
                                  {t.topics.rsp: []})
        if t.parts is None:
            entry = {t.topics.rsp_key: tkey, t.error: code, **t.extra}
            holder.setdefault(t.topics.rsp, []).append(entry)
            continue
        topic = _find_or_add(holder, t.topics.rsp, t.topics.rsp_key, tkey, {t.parts.rsp: []})
        topic.setdefault(t.parts.rsp, []).append(
            {t.parts.rsp_key: index, t.error: code, **t.extra})
    return response


def _find_or_add(holder: dict, array: str, key_field: str, key, fresh: dict) -> dict:
    items = holder.get(array)
    if items is None:
        items = holder[array] = []
    for item in items:
        if item.get(key_field) == key:
            return item
    item = {key_field: key, **fresh}
    items.append(item)
    return item


def whole_error(api_key: int, version: int, body: dict, code: int) -> dict:
    """The response answering every part of the request with `code`."""
    t = table(api_key, version)
    if t is not None:
        if t.whole == "top":
            return {"error_code": code}
        faulted = {key: code for key, _name, _p in entries(t, body, lambda k: None)}
        response = merge(t, {}, faulted)
        if t.outer is not None and api_key == 9:           # OffsetFetch v8+: per group
            for g in response.get("groups", ()):
                g["error_code"] = code
            for g in body.get("groups") or ():
                _find_or_add(response, "groups", "group_id", g["group_id"],
                             {"topics": [], "error_code": code})
        return response
    mirror = _MIRRORS.get(api_key)
    if mirror is not None:
        return mirror(version, body, code)
    return {"error_code": code}


def _find_coordinator(version: int, body: dict, code: int) -> dict:
    if version >= 4:
        return {"coordinators": [{"key": k, "node_id": -1, "host": "", "port": -1,
                                  "error_code": code} for k in body.get("coordinator_keys") or ()]}
    return {"error_code": code, "node_id": -1, "host": "", "port": -1}


def _describe_log_dirs(version: int, body: dict, code: int) -> dict:
    # v0-2 have no top-level error: the error goes on one log directory's result
    return {"error_code": code, "results": [{"error_code": code, "log_dir": "", "topics": []}]}


def _scram_users(version: int, body: dict, code: int) -> dict:
    # AlterUserScramCredentials: one result per user its deletions and upsertions name
    names = [a["name"] for part in ("deletions", "upsertions") for a in body.get(part) or ()]
    return {"results": [{"user": u, "error_code": code} for u in dict.fromkeys(names)]}


def _client_quota_entries(version: int, body: dict, code: int) -> dict:
    # AlterClientQuotas: one result per entry, naming the entry's entity
    return {"entries": [{"entity": e.get("entity") or [], "error_code": code}
                        for e in body.get("entries") or ()]}


def _each(request_field: str, response_field: str, key_field: str, request_key=None):
    def mirror(version: int, body: dict, code: int) -> dict:
        out = []
        for item in body.get(request_field) or ():
            if request_key is None:
                out.append({key_field: item, "error_code": code})
            else:
                out.append({**{k: item[k] for k in request_key}, "error_code": code})
        return {response_field: out}
    return mirror


def _share_state(version: int, body: dict, code: int) -> dict:
    # the share coordinator's APIs (83-87): one result per share-partition the request names
    return {"results": [{"topic_id": t["topic_id"], "partitions": [
        {"partition": p["partition"], "error_code": code, "start_offset": -1}
        for p in t.get("partitions") or ()]} for t in body.get("topics") or ()]}


_MIRRORS = {
    10: _find_coordinator,
    83: _share_state,
    84: _share_state,
    85: _share_state,
    86: _share_state,
    87: _share_state,
    49: _client_quota_entries,
    35: _describe_log_dirs,
    15: _each("groups", "groups", "group_id"),
    42: _each("groups_names", "results", "group_id"),
    32: _each("resources", "results", "", ("resource_type", "resource_name")),
    33: _each("resources", "responses", "", ("resource_type", "resource_name")),
    44: _each("resources", "responses", "", ("resource_type", "resource_name")),
    77: _each("group_ids", "groups", "group_id"),
    90: _each("groups", "groups", "", ("group_id",)),   # DescribeShareGroupOffsets: per group
    65: _each("transactional_ids", "transaction_states", "transactional_id"),
    69: _each("group_ids", "groups", "group_id"),
    30: _each("creations", "results", "", ()),          # CreateAcls: one result per binding
    31: _each("filters", "filter_results", "", ()),     # DeleteAcls: one result per filter
    51: _scram_users,
}


def metadata_faults(response: dict, code_for: Callable[[str, int | None], int]) -> dict:
    """Metadata: set the error of every topic (or partition) of the response code_for names.
    A faulted topic is answered without partitions, a faulted partition without a leader, as
    Kafka does while a leader is being elected."""
    for topic in response.get("topics") or ():
        code = code_for(topic.get("name"), None)
        if code:
            topic["error_code"] = code
            topic["partitions"] = []
            continue
        for p in topic.get("partitions") or ():
            code = code_for(topic.get("name"), p.get("partition_index"))
            if code:
                p["error_code"] = code
                p["leader_id"] = -1
    return response
