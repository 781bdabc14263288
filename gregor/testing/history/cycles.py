"""Elle-style dependency cycles between operations, over what Kafka's logs let us infer.

Edges between committed operations (ok, or info that must have committed):
- wr: W -> R when R read a value W wrote;
- ww: W1 -> W2 when W2's value directly follows W1's in a key's version order;
- realtime: A -> B when A completed ok before B was invoked.
Reported:
- G1c: a cycle of wr edges alone: circular information flow (each transaction read what the
  other wrote, so each committed before the other read). read_committed forbids it.
- G0: a cycle of ww edges (transactions interleaved their writes across partitions). Kafka
  allows this; it is reported, allowed by default.
- G0-realtime: a ww edge against realtime: B was invoked after A was acknowledged, yet B's
  record of some key sits before A's. A leader appends in arrival order, so an acknowledged
  record precedes everything sent after the ack.
- G1c-realtime: a wr edge against realtime: an op read a value whose writer was invoked only
  after the reader had completed (a read from the future).
"""
from __future__ import annotations

import bisect
from collections import defaultdict

from gregor.testing.history.analysis import Analysis
from gregor.testing.history.op import FAIL, OK, Op


def _graph_cycles(nodes, edges: dict[int, set[int]], limit: int = 16) -> list[list[int]]:
    """One concrete cycle per nontrivial strongly connected component (iterative Tarjan)."""
    index, low, on_stack, stack, sccs = {}, {}, set(), [], []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(edges.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(edges.get(w, ()))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        sccs.append(comp)
    cycles = []
    for comp in sccs[:limit]:
        members = set(comp)
        start = min(comp)
        # breadth-first search inside the component for a path back to start
        parent, frontier, found = {start: None}, [start], None
        while frontier and found is None:
            nxt = []
            for v in frontier:
                for w in edges.get(v, ()):
                    if w == start:
                        found = v
                        break
                    if w in members and w not in parent:
                        parent[w] = v
                        nxt.append(w)
                if found is not None:
                    break
            frontier = nxt
        path, v = [], found
        while v is not None:
            path.append(v)
            v = parent[v]
        cycles.append(path[::-1])
    return cycles


def _committed_ops(a: Analysis) -> dict[int, Op]:
    return {op.index: op for op in a.ops if op.type != FAIL and a.is_committed(op)}


def wr_cycles(a: Analysis) -> list[dict]:
    ops = _committed_ops(a)
    edges: dict[int, set[int]] = defaultdict(set)
    why: dict[tuple[int, int], tuple] = {}
    for op in a.ops:
        if op.type != OK:
            continue
        for k, o, v in a.reads_of(op):
            w = a.writer.get((k, v))
            if w is not None and w.index in ops and w.index != op.index:
                edges[w.index].add(op.index)
                why.setdefault((w.index, op.index), (k, v, o))
    return [_describe(c, why, "wr") for c in _graph_cycles(sorted(edges), edges)]


def ww_cycles(a: Analysis) -> list[dict]:
    ops = _committed_ops(a)
    edges: dict[int, set[int]] = defaultdict(set)
    why: dict[tuple[int, int], tuple] = {}
    for k, offsets in a.version.items():
        prev = None
        for o in sorted(offsets):
            writers = [a.writer.get((k, v)) for v in offsets[o]]
            writers = [w for w in writers if w is not None and w.index in ops]
            if len(writers) != 1:
                prev = None
                continue
            w = writers[0]
            if prev is not None and prev.index != w.index:
                edges[prev.index].add(w.index)
                why.setdefault((prev.index, w.index), (k, None, o))
            prev = w
    return [_describe(c, why, "ww") for c in _graph_cycles(sorted(edges), edges)]


def _describe(cycle: list[int], why: dict, kind: str) -> dict:
    steps = []
    for x, y in zip(cycle, cycle[1:] + cycle[:1]):
        k, v, o = why[(x, y)]
        steps.append({"from": x, "to": y, "edge": kind, "key": k, "offset": o,
                      **({"value": v} if v is not None else {})})
    return {"ops": cycle, "steps": steps}


def realtime_ww(a: Analysis) -> list[dict]:
    """G0-realtime, per key: a sweep over acknowledgements in completion order."""
    ops = _committed_ops(a)
    per_key: dict[str, list[tuple[int, Op]]] = defaultdict(list)
    for op in ops.values():
        for k, o, _ in a.sends_of(op):
            if o is not None:
                per_key[k].append((o, op))
    out = []
    for k, writes in sorted(per_key.items()):
        acked = sorted(((op.time, o, op) for o, op in writes if op.type == OK),
                       key=lambda t: t[0])
        times = [t for t, _, _ in acked]
        best = []                       # running max offset over acked[:i+1]
        for _, o, op in acked:
            best.append((o, op) if not best or o > best[-1][0] else best[-1])
        for o, op in writes:
            start = a.invoke_of[op.index].time
            i = bisect.bisect_left(times, start) - 1     # acks strictly before the invoke
            if i >= 0 and best[i][0] > o and best[i][1].index != op.index:
                earlier_o, earlier = best[i]
                out.append({"key": k, "acked": earlier.index, "acked_offset": earlier_o,
                            "later": op.index, "later_offset": o})
    return out


def realtime_wr(a: Analysis) -> list[dict]:
    """G1c-realtime: a reader completed before the writer of what it read was invoked."""
    out = []
    for op in a.ops:
        if op.type != OK:
            continue
        for k, o, v in a.reads_of(op):
            w = a.writer.get((k, v))
            if w is not None and w.index != op.index and a.invoke_of[w.index].time > op.time:
                out.append({"key": k, "value": v, "offset": o, "reader": op.index,
                            "writer": w.index})
    return out
