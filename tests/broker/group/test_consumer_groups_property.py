"""Random runs of a KIP-848 group: members join, heartbeat (some slow to revoke), leave, go
silent, and topics grow. However they interleave, no partition is ever held by two clients at
once, the coordinator never records one partition for two members, and once everyone
heartbeats the group settles with every subscribed partition held exactly once."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from .consumer_fakes import FakeMetadata, Member, make_consumer


class LazyMember(Member):
    """A client that may take one more heartbeat to let go of revoked partitions."""

    def __init__(self, *a, lazy: bool = False, **kw):
        super().__init__(*a, **kw)
        self.lazy = lazy
        self.to_drop: set = set()

    def _apply(self, r: dict) -> dict:
        self.last = r
        if r["error_code"] != 0:
            if r["error_code"] in (25, 110):      # unknown member / fenced: lose everything
                self.owned, self.epoch = {}, 0
            return r
        self.epoch = r["member_epoch"]
        if self.to_drop:
            for t, p in self.to_drop:
                self.owned.get(t, set()).discard(p)
            self.to_drop = set()
        if r["assignment"] is not None:
            new = {(t["topic_id"], p) for t in r["assignment"]["topic_partitions"]
                   for p in t["partitions"]}
            have = self.partitions()
            for t, p in new - have:
                self.owned.setdefault(t, set()).add(p)
            gone = have - new
            if self.lazy:
                self.to_drop = gone          # reported once more, dropped after
            else:
                for t, p in gone:
                    self.owned[t].discard(p)
        self.owned = {t: ps for t, ps in self.owned.items() if ps}
        return r


ops = st.lists(st.one_of(
    st.tuples(st.just("join"), st.integers(0, 4)),
    st.tuples(st.just("beat"), st.integers(0, 4)),
    st.tuples(st.just("beat"), st.integers(0, 4)),
    st.tuples(st.just("beat"), st.integers(0, 4)),
    st.tuples(st.just("leave"), st.integers(0, 4)),
    st.tuples(st.just("grow"), st.sampled_from(["a", "b"])),
    st.tuples(st.just("wait"), st.sampled_from([500, 2000])),
), max_size=60)


def _server_owned_once(c) -> None:
    g = c.groups.get("g")
    if g is None:
        return
    seen: dict = {}
    for m in g.members.values():
        for a in (m.assigned, m.pending_revocation):
            for t, ps in a.items():
                for p in ps:
                    assert (t, p) not in seen, f"{(t, p)} recorded for {seen[(t, p)]} and " \
                                               f"{m.member_id}"
                    seen[(t, p)] = m.member_id


def _clients_own_once(members) -> None:
    seen: dict = {}
    for m in members:
        for tp in m.partitions():
            assert tp not in seen, f"{tp} held by {seen[tp]} and {m.id}"
            seen[tp] = m.id


@settings(max_examples=150, deadline=None)
@given(ops, st.lists(st.booleans(), min_size=5, max_size=5),
       st.sampled_from(["uniform", "range"]))
def test_no_partition_is_held_twice_and_the_group_settles(run, lazy, assignor):
    meta = FakeMetadata(a=3, b=2)
    c, timers, _ = make_consumer(meta, consumer_session_timeout_ms=3000)
    subs = [["a"], ["a", "b"], ["b"], ["a", "b"], ["a"]]
    clients = [LazyMember(c, f"m{i}", subs[i], lazy=lazy[i], assignor=assignor,
                          rebalance_timeout_ms=2500) for i in range(5)]
    live: set[int] = set()
    for op, arg in run:
        if op == "join" and arg not in live:
            clients[arg].join()
            if clients[arg].last["error_code"] == 0:
                live.add(arg)
        elif op == "beat" and arg in live:
            clients[arg].beat()
            if clients[arg].last["error_code"] != 0:
                live.discard(arg)              # removed (expired or fenced): it lost all
        elif op == "leave" and arg in live:
            clients[arg].beat(epoch=-1)
            clients[arg].owned, clients[arg].to_drop = {}, set()
            live.discard(arg)
        elif op == "grow":
            tid, n = meta.topics[arg]
            meta.topics[arg] = (tid, n + 1)
        elif op == "wait":
            timers.advance(arg)
            # members the coordinator removed meanwhile find out at their next heartbeat;
            # until then their client still holds what it had: that is only safe because
            # their session (3 s) or rebalance timeout (2.5 s) has passed first
        _server_owned_once(c)
        _clients_own_once([clients[i] for i in live if
                           clients[i].id in getattr(c.groups.get("g"), "members", {})])
    # everyone still in heartbeats until the group settles
    g = c.groups.get("g")
    members = [clients[i] for i in sorted(live) if g is not None and clients[i].id in g.members]
    for _ in range(12):
        for m in members:
            m.beat()
            _server_owned_once(c)
            _clients_own_once(members)
    members = [m for m in members if m.last["error_code"] == 0]
    if not members:
        return
    assert c.consumer_describe("g")["group_state"] == "Stable"
    wanted = {(meta.id(t), p) for m in members for t in m.topics
              for p in range(meta.topics[t][1])}
    held = [tp for m in members for tp in m.partitions()]
    assert sorted(held) == sorted(wanted)
