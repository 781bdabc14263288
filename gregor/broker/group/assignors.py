"""Server-side assignors of KIP-848 consumer groups: `uniform` (the default) and `range`.

An assignor is a pure function:

    assign(members, topics, current) -> {member id: {topic id: set of partitions}}

- members: {member id: set of subscribed topic ids}
- topics: {topic id: partition count} (only topics that exist)
- current: the previous target assignment {member id: {topic id: set}}, for stickiness.

Both give every partition of every subscribed topic to exactly one member subscribed to it.

uniform: sticky and balanced. Partitions a member already had in the target stay with it
while they still exist and it still subscribes to their topic; the rest go one by one to the
subscribed member holding the fewest; then partitions move from fuller to emptier members
(subscribed to their topic) until no move narrows a gap of two or more. With identical
subscriptions that leaves every member within one partition of every other, and only as
many partitions move as the balance needs.

range: per topic, the subscribed members sorted by member id get contiguous ranges of
partitions, the first `count % members` one more (Kafka's RangeAssignor layout, so members
subscribed to co-partitioned topics get the same partition numbers of each).
"""
from __future__ import annotations

Assignment = dict


def uniform(members: dict[str, set], topics: dict[bytes, int],
            current: dict[str, Assignment]) -> dict[str, Assignment]:
    out: dict[str, Assignment] = {m: {} for m in members}
    count = {m: 0 for m in members}
    by_topic: dict[bytes, list[str]] = {}
    for m in sorted(members):
        for t in members[m]:
            if t in topics:
                by_topic.setdefault(t, []).append(m)
    valid = {(t, p) for t in by_topic for p in range(topics[t])}
    taken: set = set()
    # 1. what members had and may keep (still exists, still subscribed)
    for m in sorted(members):
        for t, ps in sorted((current.get(m) or {}).items()):
            if t not in members[m]:
                continue
            for p in sorted(ps):
                if (t, p) in valid and (t, p) not in taken:
                    out[m].setdefault(t, set()).add(p)
                    taken.add((t, p))
                    count[m] += 1
    # 2. the rest, each to the emptiest member that can take it
    for t, p in sorted(valid - taken):
        m = min(by_topic[t], key=lambda x: (count[x], x))
        out[m].setdefault(t, set()).add(p)
        count[m] += 1
    # 3. even out
    _balance(out, count, by_topic)
    return out


def _balance(out: dict[str, Assignment], count: dict[str, int],
             by_topic: dict[bytes, list[str]]) -> None:
    """Move one partition at a time from the fullest member that can give one to the
    emptiest member subscribed to its topic, while that narrows a gap of two or more.
    Terminates: every move lowers the sum of the squared counts. Taking from the fullest
    first moves no more partitions than the balance needs (no chains through members)."""
    while True:
        for src in sorted(out, key=lambda x: (-count[x], x)):
            move = _one_move(out, count, by_topic, src)
            if move is not None:
                t, p, dst = move
                out[src][t].discard(p)
                if not out[src][t]:
                    del out[src][t]
                out[dst].setdefault(t, set()).add(p)
                count[src] -= 1
                count[dst] += 1
                break
        else:
            return


def _one_move(out, count, by_topic, src):
    for t in sorted(out[src]):
        dst = min(by_topic[t], key=lambda x: (count[x], x))
        if count[dst] + 1 < count[src]:
            return t, min(out[src][t]), dst
    return None


def range_(members: dict[str, set], topics: dict[bytes, int],
           current: dict[str, Assignment]) -> dict[str, Assignment]:
    out: dict[str, Assignment] = {m: {} for m in members}
    for t, n in sorted(topics.items()):
        subs = sorted(m for m, s in members.items() if t in s)
        if not subs or n <= 0:
            continue
        per, extra = divmod(n, len(subs))
        start = 0
        for i, m in enumerate(subs):
            size = per + (1 if i < extra else 0)
            if size:
                out[m][t] = set(range(start, start + size))
            start += size
    return out


ASSIGNORS = {"uniform": uniform, "range": range_}
DEFAULT = "uniform"
