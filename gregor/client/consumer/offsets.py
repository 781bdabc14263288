"""ListOffsets lookups shared by the consumer and the admin client: earliest / latest offsets and
offsets for timestamps, grouped into one request per partition leader."""
from __future__ import annotations

from typing import Iterable, NamedTuple

from ...protocol.errors import ErrorCode, error_for_code
from ..errors import KafkaTimeoutError

EARLIEST = -2          # ListOffsets' timestamp for the log start offset
LATEST = -1            # ... for the log end offset (or the LSO with read_committed)
MAX_TIMESTAMP = -3     # ... for the offset of the record with the largest timestamp (v7+)

# Partition errors after which asking again (with fresh metadata) can succeed.
RETRY_CODES = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.FENCED_LEADER_EPOCH,
                ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.OFFSET_NOT_AVAILABLE,
                ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.REPLICA_NOT_AVAILABLE,
                ErrorCode.REQUEST_TIMED_OUT}
# ListOffsets v1 is the first with single offsets and timestamps; v0 answers in lists.
MAX_VERSION = 10


class OffsetAndTimestamp(NamedTuple):
    offset: int
    timestamp: int
    leader_epoch: int = -1


def list_offsets(net, queries: dict, *, isolation_level: int = 0, timeout: float = 30.0,
                 clock=None) -> dict:
    """{(topic, partition): timestamp_or_EARLIEST_or_LATEST} -> {(topic, partition):
    OffsetAndTimestamp or None (no such record)}. Retries leader changes until timeout."""
    clock = clock or net.clock
    deadline = clock() + timeout
    todo = dict(queries)
    result: dict = {}
    md = net.metadata
    for topic in {t for t, _ in todo}:
        md.add_topic(topic)
    last_error = None
    while todo:
        remaining = deadline - clock()
        if remaining <= 0:
            names = ", ".join(f"{t}-{p}" for t, p in sorted(todo))
            raise KafkaTimeoutError(f"could not list offsets of {names} within {timeout:.1f} s"
                                    + (f" (last error: {last_error})" if last_error else ""))
        by_leader: dict[int, list] = {}
        missing = False
        for (t, p) in todo:
            leader = md.leader_for(t, p)
            if leader < 0:
                missing = True
                err = md.topic_error(t)
                if err is not None and err.code not in RETRY_CODES:
                    raise error_for_code(err.code, f"cannot list offsets of topic {t!r}: "
                                                   f"{err.message}")
                continue
            by_leader.setdefault(leader, []).append((t, p))
        if missing:
            net.refresh_metadata(sorted({t for t, _ in todo}), timeout=remaining)
            if not by_leader:
                _unknown_partitions_check(md, todo)
                continue
        requests = []
        for leader, tps in by_leader.items():
            version = min(net.api_version(leader, "ListOffsets", timeout=remaining) or 0,
                          MAX_VERSION)
            if any(todo[tp] >= 0 for tp in tps) and version < 1:
                raise error_for_code(ErrorCode.UNSUPPORTED_VERSION,
                                     "the broker is too old to look offsets up by timestamp "
                                     "(needs ListOffsets v1)")
            body = build_request({tp: todo[tp] for tp in tps}, isolation_level,
                                 int(remaining * 1000))
            requests.append((leader, "ListOffsets", body, version))
        responses = net.send_many(requests, timeout=remaining)
        for (leader, _, _, version), resp in zip(requests, responses):
            if isinstance(resp, Exception):
                last_error = resp
                md.request_update()
                continue
            found, errors = parse_response(resp, version)
            for tp, code in errors.items():
                if tp not in todo:
                    continue
                if code in RETRY_CODES:
                    last_error = error_for_code(code)
                    md.request_update()
                    continue
                raise error_for_code(code, f"listing offsets of {tp[0]}-{tp[1]}: "
                                           f"{error_for_code(code).message}")
            for tp, o in found.items():
                if tp in todo:
                    del todo[tp]
                    result[tp] = o
        if todo and last_error is not None:
            net.refresh_metadata(sorted({t for t, _ in todo}),
                                 timeout=max(0.001, deadline - clock()))
    return result


def build_request(queries: dict, isolation_level: int, timeout_ms: int) -> dict:
    """A ListOffsets body for {(topic, partition): timestamp or EARLIEST / LATEST}."""
    topics: dict[str, list] = {}
    for (t, p), ts in queries.items():
        topics.setdefault(t, []).append({"partition_index": p, "timestamp": ts,
                                         "current_leader_epoch": -1, "max_num_offsets": 1})
    return {"replica_id": -1, "isolation_level": isolation_level,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
            "timeout_ms": timeout_ms}


def parse_response(resp: dict, version: int) -> tuple[dict, dict]:
    """({tp: OffsetAndTimestamp or None}, {tp: error code}) from a ListOffsets response."""
    found, errors = {}, {}
    for t in resp["topics"]:
        for p in t["partitions"]:
            tp = (t["name"], p["partition_index"])
            if p["error_code"]:
                errors[tp] = p["error_code"]
                continue
            if version == 0:
                olds = p.get("old_style_offsets") or []
                offset, ts = (olds[0], -1) if olds else (-1, -1)
            else:
                offset, ts = p["offset"], p["timestamp"]
            found[tp] = None if offset < 0 else OffsetAndTimestamp(offset, ts,
                                                                   p.get("leader_epoch", -1))
    return found, errors


def _unknown_partitions_check(md, todo) -> None:
    """A partition the metadata does not list (topic exists, fewer partitions) will never get a
    leader: fail now with a useful message instead of timing out."""
    for t, p in todo:
        n = md.partition_count(t)
        if n is not None and p >= n:
            raise error_for_code(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                 f"topic {t!r} has partitions 0..{n - 1}; there is no "
                                 f"partition {p}")


def tp_list(partitions: Iterable) -> list[tuple[str, int]]:
    """Accept (topic, partition) tuples, (topic, partition, offset) tuples or objects with
    .topic and .partition (confluent-kafka's TopicPartition)."""
    out = []
    for x in partitions:
        if isinstance(x, tuple):
            out.append((x[0], int(x[1])))
        else:
            out.append((x.topic, int(x.partition)))
    return out
