"""Server-side assignors of KIP-848 consumer groups: `uniform` (the default) and `range`.

An assignor is a pure function:

    assign(members, topics, current) -> {member id: {topic id: set of partitions}}

- members: {member id: set of subscribed topic ids}
- topics: {topic id: partition count} (only topics that exist)
- current: the previous target assignment {member id: {topic id: set}}, for stickiness.

Both give every partition of every subscribed topic to exactly one member subscribed to it.

uniform: sticky and balanced. Partitions a member already had in the target stay with it
while they are still valid and it is not above its fair share; the rest go one by one to the
subscribed member holding the fewest; then partitions move from fuller to emptier members
(subscribed to their topic) until no move narrows a gap of two or more. With identical
subscriptions that leaves every member within one partition of every other.

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
    valid = {(t, p) for t, n in topics.items() for p in range(n)
             if any(t in subs for subs in members.values())}
    # Fair share if every member could take any partition: keep at most that much.
    share = -(-len(valid) // len(members)) if members else 0
    taken: set = set()
    for m in sorted(members):
        for t, ps in sorted((current.get(m) or {}).items()):
            if t not in members[m]:
                continue
            for p in sorted(ps):
                if (t, p) in valid and (t, p) not in taken and count[m] < share:
                    out[m].setdefault(t, set()).add(p)
                    taken.add((t, p))
                    count[m] += 1
    by_topic: dict[bytes, list[str]] = {}
    for m, subs in members.items():
        for t in subs:
            if t in topics:
                by_topic.setdefault(t, []).append(m)
    for t, p in sorted(valid - taken):
        m = min(by_topic[t], key=lambda x: (count[x], x))
        out[m].setdefault(t, set()).add(p)
        count[m] += 1
    _balance(out, count, by_topic)
    return out


def _balance(out: dict[str, Assignment], count: dict[str, int],
             by_topic: dict[bytes, list[str]]) -> None:
    """Move partitions from fuller to emptier members subscribed to their topic until no
    single move narrows a gap of two or more (terminates: the sum of squared counts drops
    with every move)."""
    moved = True
    while moved:
        moved = False
        for src in sorted(out, key=lambda x: (-count[x], x)):
            for t in sorted(out[src]):
                for p in sorted(out[src][t]):
                    dst = min(by_topic[t], key=lambda x: (count[x], x))
                    if count[dst] + 1 < count[src]:
                        out[src][t].discard(p)
                        if not out[src][t]:
                            del out[src][t]
                        out[dst].setdefault(t, set()).add(p)
                        count[src] -= 1
                        count[dst] += 1
                        moved = True
                        break
                if moved:
                    break
            if moved:
                break


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
