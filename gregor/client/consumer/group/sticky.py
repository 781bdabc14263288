"""The cooperative-sticky assignor (KIP-429): balanced like roundrobin, but every member keeps
the partitions it owns unless the balance needs them elsewhere, and a partition that changes
hands is first given back by its owner (the leader leaves it out this round; the owner revokes
it and rejoins, and the second rebalance hands it over).

Our own algorithm, not a copy of Java's: keep valid claims (the newest generation wins a
partition two members claim), deal the unowned partitions to the least loaded subscribed member,
then move partitions from the most to the least loaded member one at a time until no member has
two more than another member that could take one of its partitions.
"""
from __future__ import annotations

from .assignors import TP, MemberSubscription, _order


def sticky_assign(members: list[MemberSubscription], partitions: dict[str, int],
                  generations: dict[str, int] | None = None) -> dict[str, list[TP]]:
    """The balanced, sticky target assignment (before the cooperative adjustment)."""
    generations = generations or {}
    ordered = sorted(members, key=_order)
    subs = {m.member_id: set(m.topics) for m in ordered}
    wanted = sorted((t, p) for t in {t for m in ordered for t in m.topics}
                    for p in range(partitions.get(t) or 0))
    valid = set(wanted)
    out: dict[str, list[TP]] = {m.member_id: [] for m in ordered}
    taken: set[TP] = set()
    # newest generation first: a member that missed a rebalance may still list old partitions
    for m in sorted(ordered, key=lambda m: -generations.get(m.member_id, -1)):
        for tp in sorted(m.owned):
            tp = (tp[0], tp[1])
            if tp in valid and tp not in taken and tp[0] in subs[m.member_id]:
                out[m.member_id].append(tp)
                taken.add(tp)
    rank = {m.member_id: i for i, m in enumerate(ordered)}
    for tp in wanted:
        if tp in taken:
            continue
        eligible = [m for m in out if tp[0] in subs[m]]
        best = min(eligible, key=lambda m: (len(out[m]), rank[m]))
        out[best].append(tp)
    _balance(out, subs, rank)
    return {m: sorted(tps) for m, tps in out.items()}


def _balance(out: dict[str, list[TP]], subs: dict[str, set], rank: dict[str, int]) -> None:
    # Each move lowers the spread between two members by 2; bounded by the partition count.
    for _ in range(sum(len(v) for v in out.values()) * len(out) + 1):
        moved = False
        for giver in sorted(out, key=lambda m: (-len(out[m]), rank[m])):
            takers = sorted((m for m in out if len(out[m]) + 1 < len(out[giver])),
                            key=lambda m: (len(out[m]), rank[m]))
            for taker in takers:
                movable = [tp for tp in out[giver] if tp[0] in subs[taker]]
                if movable:
                    tp = movable[-1]
                    out[giver].remove(tp)
                    out[taker].append(tp)
                    moved = True
                    break
            if moved:
                break
        if not moved:
            return


def cooperative_adjust(plan: dict[str, list[TP]],
                       owners: dict[TP, str]) -> dict[str, list[TP]]:
    """Leave out of each member's assignment the partitions another member still owns: that
    owner revokes them first, then rejoins (KIP-429's second rebalance)."""
    return {m: [tp for tp in tps if owners.get(tp, m) == m] for m, tps in plan.items()}


def cooperative_sticky_assign(members: list[MemberSubscription], partitions: dict[str, int],
                              generations: dict[str, int] | None = None
                              ) -> dict[str, list[TP]]:
    plan = sticky_assign(members, partitions, generations)
    owners: dict[TP, str] = {}
    for m in sorted(members, key=lambda m: generations.get(m.member_id, -1)
                    if generations else 0):
        for tp in m.owned:
            owners[(tp[0], tp[1])] = m.member_id   # the newest generation's claim wins
    return cooperative_adjust(plan, owners)
