"""partitioner.availability.timeout.ms: broker nodes the built-in partitioner stops choosing.

The sender tells `NodeAvailability` about every node the accumulator found ready (it has data
that may leave now): `update(node, now, drained)`, with drained=False when the connection could
not take a request (not connected, or max.in.flight.requests.per.connection requests already
waiting for answers). A node whose last ready time is more than the timeout past its last
drain has had data waiting that long without being able to take it: the partitions it leads
that have batches queued are left out of the load statistics the built-in partitioner draws
null-key partitions from, so no new sticky partition lands there. Once the node is drained
again its partitions are back at the next draw. Keyed records are not affected (they go to
their hash partition), nor are records with an explicit partition.

Java's semantics (KIP-794): off at 0 (the default); only the built-in partitioner with
partitioner.adaptive.partitioning.enable=true uses it; when every partition is left out the
partitioner has no load statistics and draws uniformly among the partitions with a leader.
Sans-I/O: times come in as `now` (seconds).
"""
from __future__ import annotations


class _NodeTimes:
    __slots__ = ("ready", "drained")

    def __init__(self, now: float):
        self.ready = now
        self.drained = now


class NodeAvailability:
    def __init__(self, timeout_s: float):
        self.timeout = timeout_s
        self._nodes: dict[int, _NodeTimes] = {}

    def update(self, node: int, now: float, drained: bool) -> None:
        """The accumulator had data ready for `node`; `drained` says the node could take it."""
        t = self._nodes.get(node)
        if t is None:
            t = self._nodes[node] = _NodeTimes(now)
        # The drain time first: send() threads read without a lock, ready time first, so a
        # reader never pairs a new ready time with an old drain time.
        if drained:
            t.drained = now
        t.ready = now

    def unavailable(self) -> set[int]:
        """Nodes that have had data waiting, undrained, for longer than the timeout."""
        out = set()
        for node, t in list(self._nodes.items()):
            ready = t.ready
            if ready - t.drained > self.timeout:
                out.add(node)
        return out

    def usable(self, topic: str, ids: list, sizes: list, metadata) -> list:
        """`ids` (partitions the partitioner may pick) without those whose leader is
        unavailable and that have batches queued (`sizes[p]`). Empty when all are left out:
        the partitioner then drops its load statistics and draws uniformly."""
        down = self.unavailable()
        if not down:
            return ids
        tinfo = metadata.topics.get(topic)
        if tinfo is None:
            return ids
        parts = tinfo.partitions
        out = []
        for p in ids:
            pinfo = parts.get(p)
            if pinfo is not None and pinfo.leader in down and p < len(sizes) and sizes[p]:
                continue
            out.append(p)
        return out
