"""Partition assignors as Kafka's consumers run them in the group's leader: `range` and
`roundrobin` (Java's RangeAssignor / RoundRobinAssignor), so that a group mixing gregor, Java,
librdkafka or kafka-python members gets the same assignment whichever of them leads.

An assignor takes the members' subscriptions and the partition counts of the topics and returns
each member's partitions. Members are ordered as Java orders them: static members (with a
group.instance.id) first by instance id, then dynamic members by member id.
"""
from __future__ import annotations

from dataclasses import dataclass, field

TP = tuple  # (topic, partition)

# librdkafka's and Java's names for the same assignors
ALIASES = {
    "range": "range",
    "org.apache.kafka.clients.consumer.rangeassignor": "range",
    "roundrobin": "roundrobin",
    "org.apache.kafka.clients.consumer.roundrobinassignor": "roundrobin",
    "cooperative-sticky": "cooperative-sticky",
    "org.apache.kafka.clients.consumer.cooperativestickyassignor": "cooperative-sticky",
}
COOPERATIVE = {"cooperative-sticky"}


@dataclass
class MemberSubscription:
    member_id: str
    topics: list[str]
    instance_id: str | None = None
    owned: list[TP] = field(default_factory=list)


def _order(m: MemberSubscription):
    return (0, m.instance_id, "") if m.instance_id is not None else (1, "", m.member_id)


def range_assign(members: list[MemberSubscription],
                 partitions: dict[str, int]) -> dict[str, list[TP]]:
    """Per topic, the sorted partitions cut into contiguous ranges over the sorted members
    subscribed to it; the first (count % members) members get one more."""
    out: dict[str, list[TP]] = {m.member_id: [] for m in members}
    by_topic: dict[str, list[MemberSubscription]] = {}
    for m in members:
        for t in set(m.topics):
            by_topic.setdefault(t, []).append(m)
    for topic in sorted(by_topic):
        n = partitions.get(topic)
        if not n:
            continue
        subs = sorted(by_topic[topic], key=_order)
        per, extra = divmod(n, len(subs))
        start = 0
        for i, m in enumerate(subs):
            length = per + (1 if i < extra else 0)
            out[m.member_id].extend((topic, p) for p in range(start, start + length))
            start += length
    return out


def roundrobin_assign(members: list[MemberSubscription],
                      partitions: dict[str, int]) -> dict[str, list[TP]]:
    """Every subscribed partition, sorted by topic and partition, dealt in turn to the sorted
    members, skipping a member not subscribed to that partition's topic."""
    out: dict[str, list[TP]] = {m.member_id: [] for m in members}
    ordered = sorted(members, key=_order)
    if not ordered:
        return out
    topics = sorted({t for m in members for t in m.topics if partitions.get(t)})
    subscribed = {m.member_id: set(m.topics) for m in members}
    i = 0
    for topic in topics:
        for p in range(partitions[topic]):
            while topic not in subscribed[ordered[i % len(ordered)].member_id]:
                i += 1
            out[ordered[i % len(ordered)].member_id].append((topic, p))
            i += 1
    return out


ASSIGNORS = {"range": range_assign, "roundrobin": roundrobin_assign}


def parse_strategy(value: str) -> list[str]:
    """partition.assignment.strategy ("range,roundrobin", Java class names accepted) as
    protocol names in preference order."""
    names = []
    for raw in value.split(","):
        key = raw.strip().lower()
        if not key:
            continue
        if key not in ALIASES:
            raise ValueError(f"unknown partition.assignment.strategy {raw.strip()!r}; use "
                             "range, roundrobin or cooperative-sticky")
        if ALIASES[key] not in names:
            names.append(ALIASES[key])
    if not names:
        raise ValueError("partition.assignment.strategy is empty")
    if set(names) & COOPERATIVE and set(names) - COOPERATIVE:
        # as librdkafka: one member cannot speak both rebalance protocols
        raise ValueError("cooperative-sticky cannot be mixed with eager assignors "
                         f"({', '.join(names)}); pick one kind")
    return names
