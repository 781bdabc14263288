"""The lag sampler: every few seconds, every group's committed offsets and the end offsets of
their partitions, kept as the latest snapshot (the groups page renders from it, so it stays fast
with many groups) and as a ring buffer of total lag per group (the lag-over-time chart).

One sample costs the broker: ListGroups per broker, Metadata, one batched FindCoordinator, one
OffsetFetch per coordinator (many groups each, v8+) and one ListOffsets per partition leader
(two where some group has not committed to every partition of its topics: lag there counts
from the earliest offset).
"""
from __future__ import annotations

import asyncio
import collections
import logging
import time
from dataclasses import dataclass, field

log = logging.getLogger("gregor.console.lag")


@dataclass
class GroupLag:
    group_id: str
    state: str
    protocol_type: str
    group_type: str
    committed: dict = field(default_factory=dict)    # {(topic, p): offset}
    ends: dict = field(default_factory=dict)         # {(topic, p): log end offset}, every
    #                                                  partition of the topics it reads
    starts: dict = field(default_factory=dict)       # {(topic, p): earliest}, uncommitted ones

    @property
    def lag_by_partition(self) -> dict:
        """Every partition of the group's topics: from the committed offset, or from the
        earliest one where nothing is committed (what the group has not read yet)."""
        out = {}
        for tp, end in self.ends.items():
            base = self.committed.get(tp, self.starts.get(tp))
            if base is not None:
                out[tp] = max(0, end - base)
        return out

    @property
    def uncommitted(self) -> list:
        """Partitions counted from their earliest offset (nothing committed there)."""
        return sorted(tp for tp in self.ends if tp not in self.committed)

    @property
    def total_lag(self) -> int:
        return sum(self.lag_by_partition.values())

    @property
    def max_lag(self) -> int:
        return max(self.lag_by_partition.values(), default=0)

    @property
    def topics(self) -> list[str]:
        return sorted({t for t, _ in self.committed})


def partitions_read(admin, known, timeout: float | None = None) -> list:
    """Every live partition of the topics in `known` ((topic, partition) pairs a group
    committed to or was assigned), sorted: a partition nobody committed to still has lag."""
    topics = admin.list_topics(timeout, include_internal=True)
    names = {t for t, _ in known}
    return sorted((t, p.partition) for t, d in topics.items() if t in names
                  for p in d.partitions if p.leader >= 0)


def share_starts(admin, gid: str) -> dict:
    """{(topic, p): start offset} of a share group's started share-partitions, {} when the
    coordinator cannot say (the group then shows without lag rather than failing the
    sample)."""
    from ..client.admin_share_groups import share_group_offsets
    try:
        return {tp: o for tp, o in share_group_offsets(admin, gid).items() if o >= 0}
    except Exception as e:
        log.debug("share group %s offsets: %s", gid, e)
        return {}


def take_sample(admin) -> dict[str, GroupLag]:
    """One sample (blocking; a worker thread runs it)."""
    listing = admin.list_groups()
    offsets = admin.list_offsets_of_groups([g.group_id for g in listing]) if listing else {}
    for g in listing:
        if g.group_type == "share":      # no committed offsets: the share-partitions' starts
            offsets[g.group_id] = share_starts(admin, g.group_id)
    # Committed offsets may name topics or partitions deleted since: ask only for live ones
    # (ListOffsets would retry an unknown partition until its timeout).
    topics = admin.list_topics(include_internal=True)
    by_topic: dict[str, list] = {}
    for t, d in topics.items():
        by_topic[t] = [(t, p.partition) for p in d.partitions if p.leader >= 0]
    # each group's partitions: all of every topic it committed to
    reads = {gid: {tp for t in {t for t, _ in o} for tp in by_topic.get(t, ())}
             for gid, o in offsets.items()}
    wanted = set().union(*reads.values()) if reads else set()
    bare = {tp for gid, tps in reads.items() for tp in tps if tp not in offsets[gid]}
    ends = admin.list_offsets({tp: "latest" for tp in wanted}) if wanted else {}
    starts = admin.list_offsets({tp: "earliest" for tp in bare}) if bare else {}
    end_of = {tp: o.offset for tp, o in ends.items() if o is not None}
    start_of = {tp: o.offset for tp, o in starts.items() if o is not None}
    out = {}
    for g in listing:
        committed = offsets.get(g.group_id, {})
        mine = reads.get(g.group_id, set())
        out[g.group_id] = GroupLag(g.group_id, g.state, g.protocol_type, g.group_type,
                                   committed, {tp: end_of[tp] for tp in mine if tp in end_of},
                                   {tp: start_of[tp] for tp in mine
                                    if tp not in committed and tp in start_of})
    return out


class LagSampler:
    def __init__(self, pool, interval_s: float, history: int):
        self.pool = pool
        self.interval_s = interval_s
        self.latest: dict[str, GroupLag] | None = None
        self.sampled_at: float | None = None
        self.error: str | None = None
        self.history: dict[str, collections.deque] = {}
        self._maxlen = history
        self._task: asyncio.Task | None = None
        self._lock = asyncio.Lock()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
            self._task = None

    async def _run(self) -> None:
        while True:
            started = time.monotonic()
            try:
                await self.sample()
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.debug("lag sample failed: %s", e)
            await asyncio.sleep(max(0.1, self.interval_s - (time.monotonic() - started)))

    async def sample(self) -> dict[str, GroupLag]:
        """Take a sample now (one at a time) and record it."""
        async with self._lock:
            try:
                snap = await self.pool.admin(take_sample)
            except Exception as e:
                self.error = str(e) or type(e).__name__
                raise
            self.error = None
            now = time.time()
            self.latest, self.sampled_at = snap, now
            for gid, g in snap.items():
                ring = self.history.get(gid)
                if ring is None:
                    ring = self.history[gid] = collections.deque(maxlen=self._maxlen)
                ring.append((now, g.total_lag))
            for gid in list(self.history):
                if gid not in snap:
                    del self.history[gid]        # deleted group: its history goes with it
            return snap

    async def snapshot(self, max_age_s: float | None = None) -> dict[str, GroupLag]:
        """The latest sample, or a fresh one when there is none (or it is older than
        max_age_s)."""
        if self.latest is None or (max_age_s is not None and self.sampled_at is not None
                                   and time.time() - self.sampled_at > max_age_s):
            return await self.sample()
        return self.latest

    def series(self, group_id: str) -> list[tuple[float, int]]:
        return list(self.history.get(group_id, ()))
