"""Random sequences of group operations against the coordinator (fake clock): whatever members
do, the group keeps Kafka's invariants."""
from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from gregor.broker.group.metadata import GroupState
from gregor.protocol.errors import ErrorCode as E

from .fakes import Answer, make

PROTOS = [[("range", b"r")], [("range", b"r"), ("roundrobin", b"rr")],
          [("roundrobin", b"rr2")]]


class GroupMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.c, self.t, self.store = make(initial_rebalance_delay_ms=0)
        self.known: list[str] = []          # member ids handed out
        self.join_answers: list[Answer] = []
        self.sync_answers: list[Answer] = []
        self.generations_seen: list[int] = []

    def _member(self, i):
        return self.known[i % len(self.known)] if self.known else ""

    @rule(proto=st.sampled_from(PROTOS), v4=st.booleans(),
          static=st.sampled_from([None, "a", "b"]))
    def join_new(self, proto, v4, static):
        a = Answer()
        self.c.join("g", "", static, "consumer", proto, 6000, 8000, "c", "/h", v4, a)
        self.join_answers.append(a)
        if a.done and a["member_id"]:
            self.known.append(a["member_id"])

    @rule(i=st.integers(0, 20), proto=st.sampled_from(PROTOS))
    def rejoin(self, i, proto):
        a = Answer()
        self.c.join("g", self._member(i), None, "consumer", proto, 6000, 8000, "c", "/h",
                    True, a)
        self.join_answers.append(a)

    @rule(i=st.integers(0, 20))
    def sync(self, i):
        m = self._member(i)
        g = self.c.groups.get("g")
        gen = g.generation if g else 0
        a = Answer()
        self.c.sync("g", gen, m, None, None, None, {x: b"x" for x in self.known}, a)
        self.sync_answers.append(a)

    @rule(i=st.integers(0, 20), stale=st.booleans())
    def heartbeat(self, i, stale):
        g = self.c.groups.get("g")
        gen = (g.generation if g else 0) - (1 if stale else 0)
        code = self.c.heartbeat("g", gen, self._member(i), None)
        assert code in (E.NONE, E.REBALANCE_IN_PROGRESS, E.UNKNOWN_MEMBER_ID,
                        E.ILLEGAL_GENERATION)

    @rule(i=st.integers(0, 20))
    def leave(self, i):
        self.c.leave("g", [(self._member(i), None)])

    @rule(i=st.integers(0, 20), offset=st.integers(0, 100))
    def commit(self, i, offset):
        g = self.c.groups.get("g")
        a = Answer()
        self.c.commit("g", g.generation if g else -1, self._member(i), None,
                      {("t", 0): (offset, -1, "")}, a)
        assert a.done

    @rule(ms=st.sampled_from([100, 3000, 7000, 20000]))
    def time_passes(self, ms):
        self.t.advance(ms)

    @invariant()
    def kafka_invariants(self):
        g = self.c.groups.get("g")
        if g is None:
            return
        self.generations_seen.append(g.generation)
        assert self.generations_seen == sorted(self.generations_seen), "generation went back"
        if g.members:
            assert g.leader_id in g.members, "the leader is not a member"
        if g.state is GroupState.EMPTY:
            assert not g.members
        if g.state is GroupState.STABLE:
            assert not any(m.awaiting_join or m.sync_callback for m in g.members.values())
            assert g.protocol_name is not None
            # every member supports the chosen protocol
            for m in g.members.values():
                assert g.protocol_name in {n for n, _ in m.protocols}
        for iid, mid in g.static_members.items():
            assert g.members[mid].instance_id == iid
        # every answer given is one of Kafka's for that call, and no callback fired twice
        for a in self.join_answers + self.sync_answers:
            assert a.calls <= 1


GroupMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40,
                                          deadline=None,
                                          suppress_health_check=[HealthCheck.too_slow])
test_group_state_machine = GroupMachine.TestCase
