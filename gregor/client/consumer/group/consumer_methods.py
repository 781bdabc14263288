"""The Consumer's group mode (mixed into Consumer): subscribe, commit, committed, and applying
the group's decisions (revoke, lost, assign) inside poll(), on the application's thread, as
Java's and librdkafka's consumers run their rebalance callbacks.

    c = Consumer({"bootstrap.servers": "...", "group.id": "orders-app",
                  "auto.offset.reset": "earliest"})
    c.subscribe(["orders"], on_assign=..., on_revoke=..., on_lost=...)
    for r in c.poll(1.0): ...
    c.commit()                                  # the positions of what poll() returned
"""
from __future__ import annotations

import collections
import logging
import re
import time
from typing import NamedTuple

from ...errors import ClientError, ConfigError
from .assignors import parse_strategy
from .group_client import GroupClient
from ..partition_state import PartitionState
from .requests import CommitFailedError, GroupSettings

log = logging.getLogger("gregor.client.consumer.group")


class TopicPartition(NamedTuple):
    """What the rebalance callbacks get (a tuple, so it works wherever (topic, partition)
    does)."""
    topic: str
    partition: int


def group_settings(cfg: dict) -> GroupSettings:
    try:
        raw = cfg["partition.assignment.strategy"] or "range,roundrobin"
        if not isinstance(raw, str):            # Java's list of class names
            raw = ",".join(getattr(x, "__name__", str(x)) for x in raw)
        strategies = parse_strategy(raw)
    except ValueError as e:
        raise ConfigError(f"config 'partition.assignment.strategy': {e}") from None
    if cfg["heartbeat.interval.ms"] >= cfg["session.timeout.ms"]:
        raise ConfigError("heartbeat.interval.ms must be lower than session.timeout.ms "
                          "(a third of it is usual)")
    return GroupSettings(
        group_id=cfg["group.id"], strategies=strategies,
        session_timeout_ms=cfg["session.timeout.ms"],
        rebalance_timeout_ms=cfg["max.poll.interval.ms"],
        heartbeat_interval_ms=cfg["heartbeat.interval.ms"],
        instance_id=cfg["group.instance.id"] or None,
        retry_backoff_ms=cfg["retry.backoff.ms"],
        request_timeout_ms=cfg["request.timeout.ms"],
        metadata_max_age_ms=cfg["metadata.max.age.ms"])


def _offsets_arg(offsets) -> dict:
    if isinstance(offsets, dict):
        return {(t, int(p)): int(o) for (t, p), o in offsets.items()}
    out = {}
    for item in offsets:
        if isinstance(item, tuple) and not hasattr(item, "offset"):
            out[(item[0], int(item[1]))] = int(item[2])
        else:
            out[(item.topic, int(item.partition))] = int(item.offset)
    return out


class GroupMethods:
    """Needs the Consumer's config, _assigned, _net, assign() and _timeout()."""

    _group: GroupClient | None = None
    _subscribed = False
    _in_callback = False
    _callbacks: tuple = (None, None, None)
    _next_auto_commit = 0.0
    _need_committed = False                     # partitions wait for their committed offsets
    _commit_results: collections.deque | None = None   # async outcomes for on_commit

    def _group_client(self) -> GroupClient:
        if not self.config["group.id"]:
            raise ConfigError("group.id is not set: subscribe() and commit() need a consumer "
                              "group; set group.id, or use assign() without commits")
        if self._group is None:
            self._group = GroupClient(self.config, group_settings(self.config),
                                      self._net.wakeup)
        return self._group

    def subscribe(self, topics, on_assign=None, on_revoke=None, on_lost=None) -> None:
        """Join the group for these topics (a list, one name, or names starting with "^",
        which are regular expressions). Callbacks are called from poll() as
        fn(consumer, [TopicPartition]); on_lost defaults to on_revoke."""
        self._check_open()
        if isinstance(topics, (str, re.Pattern)):
            topics = [topics]
        names, patterns = [], []
        for t in topics:
            if isinstance(t, re.Pattern):
                patterns.append(t.pattern)
            elif t.startswith("^"):
                patterns.append(t)
            else:
                names.append(t)
        if not names and not patterns:
            raise ValueError("subscribe() needs at least one topic; use unsubscribe() to stop")
        pattern = None
        if patterns:
            pattern = "|".join([f"(?:{p})" for p in patterns] +
                               [re.escape(n) + r"\Z" for n in names])
            try:
                re.compile(pattern)
            except re.error as e:
                raise ValueError(f"bad topic pattern {patterns}: {e}") from None
        g = self._group_client()
        if not self._subscribed and self._assigned:
            self._set_assignment([])            # manual assignment ends with the subscription
        self._callbacks = (on_assign, on_revoke, on_lost)
        self._subscribed = True
        self._next_auto_commit = time.monotonic() + self.config["auto.commit.interval.ms"] / 1e3
        g.subscribe(None if pattern else names, pattern)

    def unsubscribe(self) -> None:
        if not self._subscribed:
            return
        self._give_back("revoke")
        self._group.unsubscribe()
        self._subscribed = False

    # -- inside poll() ----------------------------------------------------------------------------
    def _group_poll(self) -> None:
        g = self._group
        g.tick()
        if g.has_events:
            self._apply_group_events()
        if self._need_committed:
            self._start_from_committed()
        if self.config["enable.auto.commit"] and time.monotonic() >= self._next_auto_commit:
            self._next_auto_commit = time.monotonic() + \
                self.config["auto.commit.interval.ms"] / 1e3
            offsets = self._consumed()
            if offsets:
                self._track(g.submit("commit", offsets, self._timeout(None)), offsets, True)
        results = self._commit_results
        while results:
            err, offsets = results.popleft()
            self.config["on_commit"](err, offsets)

    def _track(self, fut, offsets: dict, auto: bool):
        """Asynchronous commits: failures of auto commits are logged; on_commit (if set) hears
        of every one, from a later poll() on the application's thread, as librdkafka's."""
        if auto:
            fut.add_done_callback(_log_failure)
        if self.config["on_commit"] is not None:
            if self._commit_results is None:
                self._commit_results = collections.deque()
            results = self._commit_results
            fut.add_done_callback(lambda f: results.append((f.exception(), offsets)))
        return fut

    def _apply_group_events(self) -> None:
        for ev in self._group.take_events():
            if ev.kind == "error":
                raise ev.error
            if ev.kind in ("revoke", "lost"):
                try:
                    self._give_back(ev.kind, ev.partitions)
                finally:                        # a raising callback must not stall the group
                    self._group.revoke_done()
            elif ev.kind == "assign":
                self._take(ev.partitions)

    def _give_back(self, kind: str, partitions=None) -> None:
        """Revoke (or lose) partitions: all of them (eager) or those that move (cooperative)."""
        tps = [TopicPartition(t, p) for t, p in (self._assigned if partitions is None
                                                  else partitions) if (t, p) in self._assigned]
        if kind == "revoke" and self.config["enable.auto.commit"]:
            try:
                self._commit_sync({tp: o for tp, o in self._consumed().items() if tp in tps})
            except Exception as e:  # noqa: BLE001 - the rebalance goes on either way
                log.warning("commit before giving partitions back failed: %s", e)
        _, on_revoke, on_lost = self._callbacks
        cb = (on_lost or on_revoke) if kind == "lost" else on_revoke
        try:
            if cb is not None and tps:
                self._run_callback(cb, tps)
        finally:
            gone = set(tps)
            self._assigned = {tp: st for tp, st in self._assigned.items() if tp not in gone}
            self._drop_buffered(lambda tp: tp in gone)

    def _take(self, partitions) -> None:
        for t, p in partitions:                 # no start yet: the committed offset decides
            self._assigned[(t, p)] = PartitionState(t, p)
            self._md.add_topic(t)
        self._need_committed = True
        on_assign = self._callbacks[0]
        if on_assign is not None:
            self._run_callback(on_assign, [TopicPartition(t, p) for t, p in partitions])
        self._start_from_committed()
        log.info("group %s: assigned %s", self.config["group.id"], sorted(self._assigned))

    def _start_from_committed(self) -> None:
        """Start partitions without a position at the group's committed offsets. A failure
        (coordinator gone for default.api.timeout.ms) raises from this poll; the next poll
        tries again, as Java's consumer does."""
        waiting = [tp for tp, st in self._assigned.items()
                   if st.position is None and st.reset is None]
        if not waiting:
            self._need_committed = False
            return
        committed = self._group.call("fetch", waiting, self._timeout(None))
        for tp in waiting:
            st = self._assigned.get(tp)
            if st is None or st.position is not None or st.reset is not None:
                continue                        # moved meanwhile
            if committed.get(tp) is None and self._reset_policy == "none":
                raise ClientError(
                    f"{tp[0]}-{tp[1]} has no committed offset in group "
                    f"{self.config['group.id']!r} and auto.offset.reset is none: seek() in "
                    "on_assign, or commit a start offset for the group first")
            self._set_start(st, committed.get(tp))
        self._need_committed = False

    def _assign_while_subscribed(self, partitions) -> None:
        if not self._in_callback:
            raise ClientError("this consumer is subscribed: the group assigns its partitions; "
                              "unsubscribe() before assign()")
        # inside on_assign (librdkafka's habit): explicit offsets become seeks
        for item in partitions:
            if isinstance(item, tuple):
                tp, off = (item[0], int(item[1])), (item[2] if len(item) > 2 else None)
            else:
                tp, off = (item.topic, int(item.partition)), getattr(item, "offset", None)
            if off is not None and off >= -2 and tp in self._assigned:
                self.seek(tp[0], tp[1], off)

    def _run_callback(self, fn, tps) -> None:
        self._in_callback = True
        try:
            fn(self, tps)
        finally:
            self._in_callback = False

    def _consumed(self) -> dict:
        return {tp: st.position for tp, st in self._assigned.items() if st.position is not None}

    # -- commits ---------------------------------------------------------------------------------
    def commit(self, message=None, offsets=None, asynchronous: bool = False):
        """Commit offsets: by default the positions of everything poll() returned; or
        `offsets` ([(topic, partition, offset)], TopicPartition-likes, or {tp: offset}: the
        next offset to read, as Kafka stores it); or `message` (a record: its offset + 1).
        Synchronous by default (returns {tp: offset}); asynchronous=True returns a Future
        (and calls the on_commit config callback, on_commit(error_or_None, {tp: offset}),
        from a later poll())."""
        self._check_open()
        if message is not None:
            to_commit = {(message.topic, message.partition): message.offset + 1}
        elif offsets is not None:
            to_commit = _offsets_arg(offsets)
        else:
            to_commit = self._consumed()
        if not to_commit:
            raise ClientError("nothing to commit: no partition has a position yet")
        if asynchronous:
            return self._track(self._group_client().submit("commit", to_commit,
                                                           self._timeout(None)),
                               to_commit, False)
        return self._commit_sync(to_commit)

    def _commit_sync(self, offsets: dict) -> dict:
        if not offsets:
            return {}
        return self._group_client().call("commit", offsets, self._timeout(None))

    def committed(self, partitions, timeout: float | None = None) -> dict:
        """{(topic, partition): committed offset, or None when the group has none}."""
        self._check_open()
        tps = [(t, int(p)) for t, p, *_ in (
            (x.topic, x.partition) if not isinstance(x, tuple) else x for x in partitions)]
        return self._group_client().call("fetch", tps, self._timeout(timeout))

    def _close_group(self) -> None:
        if self._group is None:
            return
        try:
            if self._subscribed:
                if self.config["enable.auto.commit"]:
                    try:
                        self._commit_sync(self._consumed())
                    except Exception as e:  # noqa: BLE001
                        log.warning("commit on close failed: %s", e)
                on_revoke = self._callbacks[1]
                if on_revoke is not None and self._assigned:
                    self._run_callback(on_revoke, [TopicPartition(t, p)
                                                   for t, p in self._assigned])
        finally:
            self._group.close()


def _log_failure(fut) -> None:
    err = fut.exception()
    if err is not None:
        level = logging.INFO if isinstance(err, CommitFailedError) else logging.WARNING
        log.log(level, "auto commit failed: %s", err)
