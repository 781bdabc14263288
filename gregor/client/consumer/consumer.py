"""The assign-mode consumer: long-polled fetches, several partitions per request, one fetch in
flight per broker, records buffered as columns until poll() hands them out.

Like Kafka's Java consumer, fetching is pipelined: when poll() returns records, the next fetch
for every partition without buffered data is already on its way, so the broker's long poll
overlaps with the caller's processing. Not thread-safe (one thread per consumer, like Java's);
`wakeup()` may be called from another thread.
"""
from __future__ import annotations

import collections
import logging
import time
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from ...protocol.errors import ErrorCode, OffsetOutOfRangeError, error_for_code
from ..config import check_common, parse_config
from ..errors import ClientError, ConfigError
from ..metadata import Metadata
from .columns import ConsumerRecord, PartitionRecords, decode_partition
from .config import CONSUMER_OPTIONS
from .group.consumer_methods import GroupMethods, TopicPartition
from .partition_state import PartitionState as _PartitionState
from .offsets import (EARLIEST, LATEST, MAX_VERSION as _MAX_LIST_OFFSETS_VERSION, RETRY_CODES,
                      OffsetAndTimestamp, build_request, list_offsets, parse_response, tp_list)

if TYPE_CHECKING:  # pyarrow is imported only when Arrow output is asked for (~0.4 s)
    from .arrow_records import ArrowRecords

log = logging.getLogger("gregor.client.consumer")

# Fetch v13+ names topics by id; v12 is the newest that names them, which every broker we
# target supports, so we stop there.
_MAX_FETCH_VERSION = 12
_READ_COMMITTED = "read_committed"
# Partition errors that mean "the metadata is stale": refresh and fetch again.
_REFRESH_CODES = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                  ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.FENCED_LEADER_EPOCH,
                  ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.KAFKA_STORAGE_ERROR,
                  ErrorCode.REPLICA_NOT_AVAILABLE, ErrorCode.OFFSET_NOT_AVAILABLE,
                  ErrorCode.NOT_COORDINATOR, ErrorCode.REQUEST_TIMED_OUT}
# Offsets that mean "start where auto.offset.reset says" (librdkafka's OFFSET_STORED and
# OFFSET_INVALID, and None).
_USE_RESET = (None, -1000, -1001)


def _deserializer(obj, field: str):
    """A function(topic, data) from a deserializer: an object with deserialize(topic, data)
    (gregor.serde's, bound to the key or value field) or a callable(data)."""
    if obj is None:
        return None
    bind = getattr(obj, "bind_field", None)
    if callable(bind):
        obj = bind(field)
    de = getattr(obj, "deserialize", None)
    if callable(de):
        return de
    return lambda topic, data: obj(data)


class Consumer(GroupMethods):
    """Kafka consumer: assign mode, or group mode with subscribe() (group/consumer_methods.py).
    See the module docstring and docs/CONTRACTS.md."""

    def __init__(self, config: dict | None = None, *, network=None, **kwargs):
        cfg = parse_config(CONSUMER_OPTIONS, config, kwargs, what="consumer")
        check_common(cfg)
        self.config = cfg
        if cfg["fetch.max.bytes"] < cfg["max.partition.fetch.bytes"]:
            log.debug("fetch.max.bytes < max.partition.fetch.bytes: each partition still "
                      "returns at least one batch")
        self._read_committed = cfg["isolation.level"] == _READ_COMMITTED
        self._reset_policy = cfg["auto.offset.reset"]
        self._key_de = _deserializer(cfg["key.deserializer"], "key")
        self._value_de = _deserializer(cfg["value.deserializer"], "value")
        # deserializers that also decode whole Arrow columns (gregor.serde's Avro)
        self._key_arrow = getattr(getattr(self._key_de, "__self__", None), "decode_arrow", None)
        self._value_arrow = getattr(getattr(self._value_de, "__self__", None), "decode_arrow",
                                    None)
        if network is None:
            from ..network import NetworkClient
            md = Metadata(cfg["metadata.max.age.ms"],
                          allow_auto_topic_creation=cfg["allow.auto.create.topics"])
            network = NetworkClient(cfg, metadata=md)
        self._net = network
        self._md = network.metadata
        self._assigned: dict[tuple[str, int], _PartitionState] = {}
        # Fetched, not yet returned: (records, position they continue from, index of the
        # first record not yet returned).
        self._buffer: collections.deque[tuple[PartitionRecords, int, int]] = collections.deque()
        # node id -> (request, {(topic, partition): fetch offset})
        self._inflight: dict[int, tuple[Any, dict]] = {}
        self._fetch_delay = 0.0          # until a throttled leader may be fetched from
        # node id -> (ListOffsets request, {(topic, partition): EARLIEST/LATEST}) for resets
        self._resets_inflight: dict[int, tuple[Any, dict]] = {}
        self._pending_error: Exception | None = None
        # Decode fetches as Arrow arrays (True) or list columns: the form the last poll call
        # asked for, so a bulk reader's fetches need no conversion. Only a speed hint: either
        # form converts to the other on the way out.
        self._decode_arrow = False
        self._closed = False
        self._woken = False

    # -- assignment ------------------------------------------------------------------------
    def assign(self, partitions: Iterable) -> None:
        """Replace the assignment. Items: (topic, partition), (topic, partition, offset) or
        objects with .topic/.partition/.offset. Offset -2 = earliest, -1 = latest, None (or
        librdkafka's -1000/-1001) = auto.offset.reset, >= 0 = that offset."""
        self._check_open()
        if self._subscribed:
            self._assign_while_subscribed(partitions)
            return
        self._set_assignment(partitions)

    def _set_assignment(self, partitions: Iterable) -> None:
        new: dict[tuple[str, int], _PartitionState] = {}
        for item in partitions:
            if isinstance(item, tuple):
                topic, partition = item[0], int(item[1])
                offset = item[2] if len(item) > 2 else None
            else:
                topic, partition = item.topic, int(item.partition)
                offset = getattr(item, "offset", None)
            st = _PartitionState(topic, partition)
            self._set_start(st, offset)
            new[(topic, partition)] = st
            self._md.add_topic(topic)
        self._assigned = new
        self._drop_buffered(lambda tp: True)
        self._inflight.clear()  # answers to older fetches are ignored when they arrive
        self._resets_inflight.clear()

    def unassign(self) -> None:
        self.assign([])

    def assignment(self) -> list[tuple[str, int]]:
        return list(self._assigned)

    def _set_start(self, st: _PartitionState, offset) -> None:
        st.position = None
        st.reset = None
        if offset in _USE_RESET:
            if self._reset_policy == "none":
                raise ConfigError(f"{st.topic}-{st.partition} has no starting offset and "
                                  "auto.offset.reset is none: pass an offset to assign()")
            st.reset = EARLIEST if self._reset_policy == "earliest" else LATEST
        elif offset == EARLIEST or offset == LATEST:
            st.reset = offset
        elif int(offset) >= 0:
            st.position = int(offset)
        else:
            raise ValueError(f"offset {offset} for {st.topic}-{st.partition}: use >= 0, "
                             "-2 (earliest), -1 (latest) or None (auto.offset.reset)")

    def _state(self, topic: str, partition: int) -> _PartitionState:
        st = self._assigned.get((topic, int(partition)))
        if st is None:
            raise ClientError(f"{topic}-{partition} is not assigned to this consumer; "
                              f"assigned: {sorted(self._assigned)}")
        return st

    # -- positions -------------------------------------------------------------------------
    def seek(self, topic, partition, offset=None) -> None:
        """Move the next fetch of a partition to offset (-2 earliest, -1 latest). Also
        accepts seek(TopicPartition_with_offset)."""
        if offset is None and not isinstance(topic, str):
            topic, partition, offset = topic.topic, topic.partition, topic.offset
        st = self._state(topic, partition)
        self._set_start(st, offset)
        self._drop_buffered(lambda tp: tp == (st.topic, st.partition))

    def seek_to_beginning(self, partitions: Iterable | None = None) -> None:
        for tp in (tp_list(partitions) if partitions is not None else list(self._assigned)):
            self.seek(tp[0], tp[1], EARLIEST)

    def seek_to_end(self, partitions: Iterable | None = None) -> None:
        for tp in (tp_list(partitions) if partitions is not None else list(self._assigned)):
            self.seek(tp[0], tp[1], LATEST)

    def position(self, topic, partition=None, timeout: float | None = None) -> int:
        """The offset of the next record poll() will return for a partition (resolving a
        pending earliest/latest reset first)."""
        if partition is None and not isinstance(topic, str):
            topic, partition = topic.topic, topic.partition
        st = self._state(topic, partition)
        if st.position is None:
            self._reset_positions([st], self._timeout(timeout))
        return st.position

    def highwater(self, topic: str, partition: int) -> int:
        """The high watermark from the last fetch of that partition (-1 before any)."""
        return self._state(topic, partition).high_watermark

    def lag(self, topic: str, partition: int) -> int | None:
        st = self._state(topic, partition)
        if st.high_watermark < 0 or st.position is None:
            return None
        end = st.last_stable_offset if self._read_committed and st.last_stable_offset >= 0 \
            else st.high_watermark
        return max(0, end - st.position)

    def pause(self, *partitions) -> None:
        """Stop fetching (and returning) the given partitions until resume()."""
        for topic, partition in tp_list(_flatten(partitions)):
            self._state(topic, partition).paused = True

    def resume(self, *partitions) -> None:
        for topic, partition in tp_list(_flatten(partitions)):
            self._state(topic, partition).paused = False

    def paused(self) -> list[tuple[str, int]]:
        return [tp for tp, st in self._assigned.items() if st.paused]

    # -- offset lookups ---------------------------------------------------------------------
    def _timeout(self, timeout: float | None) -> float:
        return self.config["default.api.timeout.ms"] / 1000.0 if timeout is None else timeout

    def _isolation(self) -> int:
        return 1 if self._read_committed else 0

    def beginning_offsets(self, partitions: Iterable, timeout: float | None = None) -> dict:
        """{(topic, partition): log start offset}."""
        res = list_offsets(self._net, {tp: EARLIEST for tp in tp_list(partitions)},
                           isolation_level=self._isolation(), timeout=self._timeout(timeout))
        return {tp: (o.offset if o else 0) for tp, o in res.items()}

    def end_offsets(self, partitions: Iterable, timeout: float | None = None) -> dict:
        """{(topic, partition): log end offset} (the last stable offset with read_committed)."""
        res = list_offsets(self._net, {tp: LATEST for tp in tp_list(partitions)},
                           isolation_level=self._isolation(), timeout=self._timeout(timeout))
        return {tp: (o.offset if o else 0) for tp, o in res.items()}

    def offsets_for_times(self, timestamps: dict, timeout: float | None = None) -> dict:
        """{(topic, partition): timestamp_ms} -> {(topic, partition): OffsetAndTimestamp of
        the first record with timestamp >= it, or None when there is none}."""
        queries = {}
        for tp, ts in timestamps.items():
            if ts < 0:
                raise ValueError(f"timestamp {ts} for {tp}: timestamps must be >= 0")
            queries[tp_list([tp])[0]] = int(ts)
        return list_offsets(self._net, queries, isolation_level=self._isolation(),
                            timeout=self._timeout(timeout))

    def _reset_positions(self, states: list[_PartitionState], timeout: float) -> None:
        queries = {(st.topic, st.partition): st.reset for st in states}
        res = list_offsets(self._net, queries, isolation_level=self._isolation(),
                           timeout=timeout)
        for st in states:
            o = res.get((st.topic, st.partition))
            if st.reset is None:
                continue  # seeked meanwhile
            st.position = o.offset if o is not None else 0
            st.reset = None
            log.debug("reset %s-%s to %s", st.topic, st.partition, st.position)

    # -- polling ----------------------------------------------------------------------------
    def poll(self, timeout: float = 1.0, max_records: int | None = None) -> list[ConsumerRecord]:
        """Records fetched from the assigned partitions, waiting up to timeout seconds for
        some; at most max.poll.records (or max_records) of them."""
        limit = max_records or self.config["max.poll.records"]
        deadline = time.monotonic() + max(0.0, timeout)
        self._decode_arrow = False
        while True:
            out: list[ConsumerRecord] = []
            for pr in self._poll_columns(deadline - time.monotonic(), limit):
                out.extend(self._deserialize(pr.records()))
            # Empty chunks (only transaction markers were read) move positions but are no
            # reason to return early.
            if out or time.monotonic() >= deadline:
                return out

    def poll_batches(self, timeout: float = 1.0, max_records: int | None = None, *,
                     arrow: bool = False) -> list[PartitionRecords] | list[ArrowRecords]:
        """Like poll() but returns one PartitionRecords (columns: offsets, timestamps, keys,
        values, headers; `.to_arrow()`) per partition, and everything buffered unless
        max_records is given. Deserializers are not applied: bulk readers get raw bytes.
        A chunk may be empty when a fetch held only transaction markers or aborted data: its
        next_offset still says where the partition's position moved to.

        arrow=True returns ArrowRecords instead: the same columns as pyarrow arrays, decoded
        without a Python object per record (the fast path for bulk readers). With a
        gregor.serde AvroDeserializer as key/value.deserializer, keys/values are then typed
        Arrow columns of its reader schema (a struct for a record), also decoded in bulk."""
        self._decode_arrow = arrow
        chunks = self._poll_columns(timeout, max_records or float("inf"))
        if arrow:
            from .arrow_records import ArrowRecords
            out = [ArrowRecords.from_columns(c) if isinstance(c, PartitionRecords) else c
                   for c in chunks]
            if self._key_arrow is not None or self._value_arrow is not None:
                self._decode_arrow_columns(out)
            return out
        return [c if isinstance(c, PartitionRecords) else c.to_columns() for c in chunks]

    def _poll_columns(self, timeout: float, limit) -> list[PartitionRecords]:
        self._check_open()
        deadline = time.monotonic() + max(0.0, timeout)
        group = self._group if self._subscribed else None
        if group is not None:
            self._group_poll()
        while True:
            self._raise_pending()
            failed = self._net.authentication_failure()
            if failed is not None:
                raise failed                     # TLS / SASL refused: retrying will not help
            got = self._drain(limit)
            if got:
                self._send_fetches()  # pipeline: the next fetch runs while the caller works
                return got
            if self._woken:
                self._woken = False
                return []
            self._send_resets()
            self._send_fetches()
            now = time.monotonic()
            wait = max(0.0, deadline - now)
            if self._md.needs_update(now):
                wait = min(wait, self._net.maybe_update_metadata(now) or wait)
            if not self._inflight and not self._resets_inflight:
                # Nothing to wait for on the wire (no leader yet, all paused, or backoff):
                # poll briefly so metadata and connections make progress.
                wait = min(wait, self._fetch_delay or 0.05)
            # Even poll(0) does one round of I/O, so repeated zero-timeout polls progress.
            self._net.poll(wait)
            self._collect()
            if group is not None and group.has_events:
                self._apply_group_events()
            if time.monotonic() >= deadline:
                self._raise_pending()
                got = self._drain(limit)
                if got:
                    self._send_fetches()
                return got

    def _drain(self, limit) -> list[PartitionRecords]:
        out, taken, keep = [], 0, collections.deque()
        while self._buffer and taken < limit:
            pr, start, idx = self._buffer.popleft()
            st = self._assigned.get((pr.topic, pr.partition))
            if st is None or st.position != start:
                continue  # unassigned or seeked since the fetch: stale
            if st.paused:
                keep.append((pr, start, idx))
                continue
            if len(pr) - idx > limit - taken:
                # max.poll.records: hand out a slice and keep a cursor on the rest (slicing
                # the remainder each time would cost O(n^2) over a large fetch).
                stop = idx + int(limit - taken)
                self._buffer.appendleft((pr, pr.offset_at(stop), stop))
                pr = pr.slice(idx, stop)
            elif idx:
                pr = pr.slice(idx, len(pr))
            st.position = pr.next_offset
            taken += len(pr)
            out.append(pr)
        self._buffer.extendleft(reversed(keep))
        return out

    def _send_resets(self) -> None:
        """Ask partition leaders for the earliest/latest offsets of partitions awaiting a
        reset, without blocking: poll() keeps its timeout, answers land in _collect()."""
        waiting = {tp for _, tps in self._resets_inflight.values() for tp in tps}
        by_node: dict[int, dict] = {}
        for tp, st in self._assigned.items():
            if st.position is not None or st.reset is None or tp in waiting:
                continue
            leader = self._md.leader_for(st.topic, st.partition)
            if leader < 0:
                self._md.request_update()
                continue
            if leader not in self._resets_inflight:
                by_node.setdefault(leader, {})[tp] = st.reset
        now = time.monotonic()
        for node, queries in by_node.items():
            if not self._net.ready(node, now):
                continue
            version = min(self._net.api_version_for(node, "ListOffsets") or 0,
                          _MAX_LIST_OFFSETS_VERSION)
            body = build_request(queries, self._isolation(), self.config["request.timeout.ms"])
            req = self._net.send(node, "ListOffsets", body, version)
            self._resets_inflight[node] = (req, queries)

    def _finish_resets(self, req, queries: dict) -> None:
        if req.error is not None:
            log.debug("offset reset request failed: %s", req.error)
            self._md.request_update()
            return
        found, errors = parse_response(req.body, req.version)
        for tp, code in errors.items():
            if code in RETRY_CODES:
                self._md.request_update()
            else:
                self._fail(code, f"resetting the offset of {tp[0]}-{tp[1]}")
        for tp, o in found.items():
            st = self._assigned.get(tp)
            if st is None or st.position is not None or st.reset != queries.get(tp):
                continue  # unassigned or seeked since
            st.position = o.offset if o is not None else 0
            st.reset = None
            log.debug("reset %s-%s to %s", st.topic, st.partition, st.position)

    def _send_fetches(self) -> None:
        buffered = {(pr.topic, pr.partition) for pr, _, _ in self._buffer}
        by_node: dict[int, list[_PartitionState]] = {}
        now = time.monotonic()
        for tp, st in self._assigned.items():
            if st.paused or st.position is None or tp in buffered:
                continue
            leader = self._md.leader_for(st.topic, st.partition)
            if leader < 0:
                self._md.request_update()
                continue
            if leader in self._inflight:
                continue
            by_node.setdefault(leader, []).append(st)
        cfg = self.config
        self._fetch_delay = 0.0
        for node, states in by_node.items():
            if not self._net.ready(node, now):
                # e.g. the broker throttled us (a quota): fetch again when that is over
                delay = self._net.connection_delay(node, now)
                if delay > 0:
                    self._fetch_delay = min(self._fetch_delay or delay, delay)
                continue
            version = min(self._net.api_version_for(node, "Fetch") or 0, _MAX_FETCH_VERSION)
            topics: dict[str, list] = {}
            offsets = {}
            for st in states:
                topics.setdefault(st.topic, []).append({
                    "partition": st.partition, "current_leader_epoch": -1,
                    "fetch_offset": st.position, "last_fetched_epoch": -1,
                    "log_start_offset": -1,
                    "partition_max_bytes": cfg["max.partition.fetch.bytes"]})
                offsets[(st.topic, st.partition)] = st.position
            body = {"replica_id": -1, "max_wait_ms": cfg["fetch.max.wait.ms"],
                    "min_bytes": cfg["fetch.min.bytes"], "max_bytes": cfg["fetch.max.bytes"],
                    "isolation_level": self._isolation(),
                    # session 0 / epoch -1: a full, sessionless fetch every time
                    "session_id": 0, "session_epoch": -1,
                    "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
                    "forgotten_topics_data": [], "rack_id": cfg["client.rack"]}
            timeout = (cfg["request.timeout.ms"] + cfg["fetch.max.wait.ms"]) / 1000.0
            req = self._net.send(node, "Fetch", body, version, timeout=timeout)
            self._inflight[node] = (req, offsets)

    def _collect(self) -> None:
        for node, (req, queries) in list(self._resets_inflight.items()):
            if req.done:
                del self._resets_inflight[node]
                self._finish_resets(req, queries)
        for node, (req, offsets) in list(self._inflight.items()):
            if not req.done:
                continue
            del self._inflight[node]
            if req.error is not None:
                log.debug("fetch from node %s failed: %s", node, req.error)
                self._md.request_update()
                continue
            self._handle_fetch(req.body, offsets)

    def _handle_fetch(self, body: dict, offsets: dict) -> None:
        top = body.get("error_code", 0)
        if top:
            log.debug("fetch failed as a whole: %s", error_for_code(top))
            self._md.request_update()
            return
        check = self.config["check.crcs"]
        for t in body["responses"]:
            topic = t["topic"]
            for p in t["partitions"]:
                tp = (topic, p["partition_index"])
                st = self._assigned.get(tp)
                fetch_offset = offsets.get(tp)
                if st is None or fetch_offset is None or st.position != fetch_offset:
                    continue  # unassigned or seeked while the fetch was in flight
                code = p["error_code"]
                if code == 0:
                    st.high_watermark = p["high_watermark"]
                    st.last_stable_offset = p.get("last_stable_offset", -1)
                    st.log_start_offset = p.get("log_start_offset", -1)
                    data = p["records"]
                    decode = decode_partition
                    if self._decode_arrow:
                        from .arrow_records import decode_partition_arrow as decode
                    pr = decode(data, topic, tp[1], fetch_offset, check_crcs=check,
                                aborted=p.get("aborted_transactions"),
                                read_committed=self._read_committed)
                    pr.high_watermark = st.high_watermark
                    pr.last_stable_offset = st.last_stable_offset
                    pr.log_start_offset = st.log_start_offset
                    if len(pr) or pr.next_offset > fetch_offset:
                        # (empty but advanced: only markers / aborted data; bulk readers see
                        # the new position through the empty chunk)
                        self._buffer.append((pr, fetch_offset, 0))
                    elif data and len(data) >= self.config["max.partition.fetch.bytes"]:
                        self._pending_error = error_for_code(
                            ErrorCode.MESSAGE_TOO_LARGE,
                            f"the batch at offset {fetch_offset} of {topic}-{tp[1]} is larger "
                            "than max.partition.fetch.bytes="
                            f"{self.config['max.partition.fetch.bytes']} and this broker "
                            "does not return oversized batches; raise that setting")
                elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    self._out_of_range(st, fetch_offset)
                elif code in _REFRESH_CODES:
                    self._md.request_update()
                else:
                    self._fail(code, f"fetching {topic}-{tp[1]} at offset {fetch_offset}")

    def _fail(self, code: int, doing: str) -> None:
        """Keep a partition's error for the next poll() to raise, saying what failed."""
        self._pending_error = error_for_code(code, f"{doing}: {error_for_code(code).message}")

    def _out_of_range(self, st: _PartitionState, offset: int) -> None:
        if self._reset_policy == "none":
            self._pending_error = OffsetOutOfRangeError(
                f"offset {offset} is out of range for {st.topic}-{st.partition} and "
                "auto.offset.reset is none; seek() to a valid offset (see "
                "beginning_offsets()/end_offsets())")
            return
        log.info("offset %s out of range for %s-%s; resetting to %s", offset, st.topic,
                 st.partition, self._reset_policy)
        st.position = None
        st.reset = EARLIEST if self._reset_policy == "earliest" else LATEST

    def _raise_pending(self) -> None:
        if self._pending_error is not None:
            err, self._pending_error = self._pending_error, None
            raise err

    def _drop_buffered(self, pred) -> None:
        self._buffer = collections.deque(
            e for e in self._buffer if not pred((e[0].topic, e[0].partition)))

    def _decode_arrow_columns(self, chunks) -> None:
        """keys / values of ArrowRecords decoded into typed columns, in place."""
        for c in chunks:
            for name, fn in (("keys", self._key_arrow), ("values", self._value_arrow)):
                if fn is None or not len(c):
                    continue
                try:
                    setattr(c, name, fn(getattr(c, name), c.topic))
                except Exception as e:
                    row = getattr(e, "row", None)
                    where = f" offset {c.offset_at(row)}" if row is not None else ""
                    what = "key" if name == "keys" else "value"
                    raise ClientError(f"{what}.deserializer failed on {c.topic}-{c.partition}"
                                      f"{where}: {e}") from e

    def _deserialize(self, records: list[ConsumerRecord]) -> list[ConsumerRecord]:
        kd, vd = self._key_de, self._value_de
        if kd is None and vd is None:
            return records
        out = []
        for r in records:
            try:
                key = kd(r.topic, r.key) if kd is not None and r.key is not None else r.key
            except Exception as e:
                raise ClientError(f"key.deserializer failed on {r.topic}-{r.partition} offset "
                                  f"{r.offset}: {e}") from e
            try:
                value = (vd(r.topic, r.value) if vd is not None and r.value is not None
                         else r.value)
            except Exception as e:
                raise ClientError(f"value.deserializer failed on {r.topic}-{r.partition} "
                                  f"offset {r.offset}: {e}") from e
            out.append(r._replace(key=key, value=value))
        return out

    # -- lifecycle ---------------------------------------------------------------------------
    def wakeup(self) -> None:
        """Make a poll() blocked in another thread return early (with no records)."""
        self._woken = True
        self._net.wakeup()

    def list_topics(self, timeout: float | None = None) -> dict:
        """{topic: sorted partition ids} of the whole cluster."""
        self._check_open()
        md = self._net.refresh_metadata(None, timeout=self._timeout(timeout))
        return {t: sorted(info.partitions) for t, info in md.topics.items() if not
                info.error_code}

    def partitions_for_topic(self, topic: str, timeout: float | None = None) -> list[int]:
        self._check_open()
        md = self._net.refresh_metadata([topic], timeout=self._timeout(timeout))
        err = md.topic_error(topic)
        if err is not None:
            raise error_for_code(err.code, f"topic {topic!r}: {err.message}")
        return md.partitions_for(topic) or []

    def _check_open(self) -> None:
        if self._closed:
            raise ClientError("this consumer is closed; create a new one")

    def close(self) -> None:
        if self._closed:
            return
        try:
            self._close_group()             # commits, on_revoke, leaves: may raise
        finally:
            self._closed = True
            self._inflight.clear()
            self._resets_inflight.clear()
            self._buffer.clear()
            self._net.close()

    def __enter__(self) -> "Consumer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __iter__(self) -> Iterator[ConsumerRecord]:
        """Yield records forever (until close() or an error)."""
        while not self._closed:
            yield from self.poll(1.0)


def _flatten(items) -> list:
    # pause(("t", 0), ("t", 1)) and pause([("t", 0), ("t", 1)]) both work.
    if len(items) == 1 and isinstance(items[0], (list, set, frozenset)):
        return list(items[0])
    if len(items) == 2 and isinstance(items[0], str):
        return [items]
    return list(items)


__all__ = ["Consumer", "ConsumerRecord", "TopicPartition", "PartitionRecords",
           "OffsetAndTimestamp", "CONSUMER_OPTIONS"]
