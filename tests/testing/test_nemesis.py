"""The nemesis: plans are reproducible from their seed and honour the session timeout; the
executor turns each step into the right cuts and signals, and its heal undoes all of it
(checked against a recording fake cluster, so no root and no processes)."""
from __future__ import annotations

import threading

from gregor.testing import nemesis
from gregor.testing.nemesis import Nemesis, Step, ring_cuts, schedule


def test_same_seed_same_plan_and_another_seed_another():
    a = schedule(seed=11, duration=300, session_s=3.0)
    assert a == schedule(seed=11, duration=300, session_s=3.0)
    assert a != schedule(seed=12, duration=300, session_s=3.0)


def test_plans_cover_every_fault_and_keep_to_the_session_rules():
    steps = [s for seed in range(5) for s in schedule(seed, 600, session_s=3.0)]
    assert {s.fault for s in steps} == set(nemesis.FAULTS)
    for s in steps:
        if s.fault == "pause-short":
            assert s.duration < 3.0
        if s.fault == "pause-long":
            assert s.duration > 3.0
        if s.fault in ("zombie-leader", "leader-from-followers", "isolate"):
            assert s.duration > 3.0                # long enough for the session to expire
    for seed in range(5):
        plan = schedule(seed, 100, session_s=3.0)
        assert plan[0].at >= 6.0                   # a quiet start
        assert all(s.at + s.duration <= 100 for s in plan)
        assert all(b.at >= a.at + a.duration for a, b in zip(plan, plan[1:]))   # one at a time
    assert {s.role for s in steps if s.fault in ("zombie-leader", "leader-alone")} == {"leader"}
    assert {s.role for s in steps if s.fault == "controller-from-zk"} == {"controller"}


def test_majorities_ring_of_three_each_hears_a_majority_none_the_same():
    cuts = set(ring_cuts(["a", "b", "c"]))
    assert cuts == {("c", "a"), ("a", "b"), ("b", "c")}
    five = ring_cuts(list("abcde"))
    heard = {d: {s for s in "abcde" if (s, d) not in five} for d in "abcde"}
    assert all(len(h) == 3 for h in heard.values())
    assert len({frozenset(h) for h in heard.values()}) == 5


class FakeNet:
    def __init__(self, nodes):
        self.nodes = nodes
        self.cuts: set = set()

    def cut(self, a, b):
        self.cuts.add((a, b))

    def cut_both(self, a, b):
        self.cut(a, b)
        self.cut(b, a)

    def isolate(self, node, others):
        for o in others:
            self.cut_both(node, o)

    def heal(self, a=None, b=None):
        self.cuts = {(s, d) for s, d in self.cuts
                     if not ((a is None or s == a) and (b is None or d == b))}


class FakeProcess:
    def __init__(self):
        self.running, self.paused, self.calls = True, False, []

    def kill(self):
        self.calls.append("kill")
        self.running = False

    def start(self, timeout=None):
        self.calls.append("start")
        self.running = True

    def pause(self):
        self.calls.append("pause")
        self.paused = True

    def resume(self):
        self.paused = False


class FakeCluster:
    def __init__(self):
        self.broker_ids = [0, 1, 2]
        self.brokers = [FakeProcess() for _ in self.broker_ids]
        self.zookeeper = FakeProcess()
        self.net = FakeNet(["zk", "n0", "n1", "n2", "c0", "ctl"])
        self.leader = 2

    def node_of(self, i):
        return f"n{i}"

    def broker(self, i):
        return self.brokers[i]

    def controller(self):
        return 1

    def leader_of(self, topic, partition):
        return self.leader


def run_steps(cluster, steps, during):
    seen = []
    n = Nemesis(steps, cluster, [("q", 0)], log=lambda line: None)
    done = threading.Event()

    def watch():
        # what the network and processes look like in the middle of each step
        for s in steps:
            while len(n.faults) < steps.index(s) + 1:
                threading.Event().wait(0.005)
            seen.append(during())
        done.set()
    t = threading.Thread(target=watch)
    t.start()
    n.start()
    t.join(30)
    n.stop()
    return n, seen


def test_zombie_leader_cuts_only_the_leader_and_zookeeper_and_the_heal_restores_all():
    c = FakeCluster()
    steps = [Step(0.0, "zombie-leader", 0.2, "leader"), Step(0.3, "kill", 0.1, "controller"),
             Step(0.5, "zk-pause", 0.1)]
    n, seen = run_steps(c, steps, lambda: (set(c.net.cuts), c.brokers[1].running,
                                          c.zookeeper.paused))
    assert seen[0][0] == {("n2", "zk"), ("zk", "n2")}      # clients and followers still reach it
    assert seen[1][1] is False                             # the controller was killed
    assert seen[2][2] is True
    assert c.brokers[1].calls == ["kill", "start"]
    assert c.net.cuts == set() and not c.zookeeper.paused
    assert all(b.running and not b.paused for b in c.brokers)
    assert [r.target for r in n.faults] == ["broker 2|zk", "broker 1", "zk"]
    assert all(r.end_mono >= r.start_mono and r.start_wall > 0 for r in n.faults)


def test_leader_from_followers_and_isolation_spare_the_control_node():
    c = FakeCluster()
    steps = [Step(0.0, "leader-from-followers", 0.1, "leader"), Step(0.2, "isolate", 0.1, "any",
                                                                     pick=0)]
    n, seen = run_steps(c, steps, lambda: set(c.net.cuts))
    assert seen[0] == {("n2", "n0"), ("n0", "n2"), ("n2", "n1"), ("n1", "n2")}
    assert {p for p in seen[1] if "ctl" in p} == set()
    assert {d for s, d in seen[1] if s == "n0"} == {"zk", "n1", "n2", "c0"}
    assert c.net.cuts == set()


def test_stop_in_the_middle_of_a_fault_still_heals():
    c = FakeCluster()
    n = Nemesis([Step(0.0, "pause-long", 60.0, "any", pick=1)], c, [("q", 0)],
                log=lambda line: None).start()
    while not n.faults:
        threading.Event().wait(0.005)
    assert c.brokers[1].paused
    n.stop()
    assert not c.brokers[1].paused and n.faults[0].end_mono is not None


def test_kill_after_lag_kills_the_leader_while_it_is_still_cut_from_its_followers():
    c = FakeCluster()
    seen = []
    broker = c.brokers[2]
    original_kill = broker.kill

    def kill():
        seen.append(set(c.net.cuts))
        original_kill()
    broker.kill = kill
    n = Nemesis([Step(0.0, "kill-after-lag", 0.1, "leader", 0, 2)], c, [("q", 0)],
                log=lambda line: None).start()
    n._thread.join(10)                 # the plan runs to its end
    n.stop()
    assert seen == [{("n2", "n0"), ("n0", "n2"), ("n2", "n1"), ("n1", "n2")}]
    assert broker.calls == ["kill", "start"] and c.net.cuts == set()
