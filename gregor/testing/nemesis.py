"""A nemesis: seeded random fault schedules for a ZooKeeper cluster, and their executor.

    plan = schedule(seed=7, duration=120, session_s=3.0)      # pure: same seed, same plan
    with Nemesis(plan, cluster, topics=[("q", 0), ("q", 1)], history=h) as n:
        ...run the workload...
    n.faults                   # what was done, each with its monotonic and wall time

The plan (sans-I/O) is a list of Steps, one fault at a time, separated by gaps: a quiet start,
then faults drawn from FAULTS (kill -9 and restart; SIGSTOP shorter and longer than the
ZooKeeper session; a broker isolated; the leader cut from ZooKeeper only, so clients still
reach it (a zombie leader); the leader cut from its followers only, or from them and
ZooKeeper while clients reach it; the controller cut from
ZooKeeper; ZooKeeper cut from every broker; a majorities ring; a one-way cut; ZooKeeper paused
or killed and restarted) or a quiet period, and at the end a heal of everything. Durations are
multiples of the session timeout, so "longer than the session" stays true whatever it is set to.

Targets are roles (the leader of a partition, the controller, a broker) resolved when the step
runs, from ZooKeeper; the choice among candidates uses a number drawn with the plan, so a
replay with the same seed makes the same choices wherever the cluster state is the same.
"""
from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field

# name -> weight in the draw
FAULTS = {
    "kill": 3, "pause-short": 2, "pause-long": 3, "isolate": 3, "zombie-leader": 3,
    "leader-from-followers": 3, "controller-from-zk": 2, "zk-from-everyone": 2,
    "majorities-ring": 2, "one-way": 2, "zk-pause": 1, "zk-restart": 1, "quiet": 6,
    "leader-alone": 2,
}
ROLES = ("leader", "controller", "any")


@dataclass(frozen=True)
class Step:
    at: float              # seconds from the start of the run
    fault: str
    duration: float        # how long the fault lasts before it is undone
    role: str = "any"      # whose fault: leader | controller | any (resolved when it runs)
    pick: int = 0          # which of the candidates (a number drawn with the plan)
    extra: int = 0         # a second choice (the follower of a one-way cut, its direction)

    def describe(self) -> str:
        return f"{self.fault}({self.role}, {self.duration:.1f}s)"


def schedule(seed: int, duration: float, session_s: float, *, quiet_start: float | None = None,
             faults: dict[str, int] | None = None) -> list[Step]:
    """The fault plan of a run: deterministic in its arguments."""
    rng = random.Random(seed)
    weights = dict(faults or FAULTS)
    names = sorted(weights)
    start = session_s * 2 if quiet_start is None else quiet_start
    steps: list[Step] = []
    t = start
    while True:
        fault = rng.choices(names, [weights[n] for n in names])[0]
        length = _length(fault, session_s, rng)
        if t + length > duration:
            break
        role = _role(fault, rng)
        steps.append(Step(round(t, 3), fault, round(length, 3), role, rng.randrange(1 << 16),
                          rng.randrange(1 << 16)))
        # a gap after each fault: the cluster recovers a little before the next one
        t += length + rng.uniform(0.5, 2.0) * session_s
    return steps


def _length(fault: str, session_s: float, rng: random.Random) -> float:
    if fault == "pause-short" or (fault == "zk-pause" and rng.random() < 0.5):
        return rng.uniform(0.2, 0.6) * session_s         # under the session: no expiry
    if fault in ("pause-long", "zk-pause"):
        return rng.uniform(1.5, 3.0) * session_s         # past the session: expiry, election
    if fault == "quiet":
        return rng.uniform(1.0, 3.0) * session_s
    if fault in ("kill", "zk-restart"):
        return rng.uniform(0.5, 3.0) * session_s         # time dead before the restart
    return rng.uniform(1.5, 4.0) * session_s             # partitions outlast a session


def _role(fault: str, rng: random.Random) -> str:
    if fault in ("zombie-leader", "leader-from-followers", "leader-alone", "one-way"):
        return "leader"
    if fault == "controller-from-zk":
        return "controller"
    if fault in ("kill", "pause-short", "pause-long", "isolate"):
        return rng.choice(ROLES)
    return "any"


def ring_cuts(nodes: list[str]) -> list[tuple[str, str]]:
    """Directed cuts of a majorities ring: each node hears itself and the next n//2 nodes
    around the ring, a majority, yet no two nodes hear the same majority."""
    n = len(nodes)
    hears = {nodes[i]: {nodes[(i + k) % n] for k in range(n // 2 + 1)} for i in range(n)}
    return [(src, dst) for dst in nodes for src in nodes
            if src != dst and src not in hears[dst]]


# -- execution ---------------------------------------------------------------------------

@dataclass
class FaultRecord:
    step: Step
    target: str                    # what it hit, e.g. "broker 1", "zk", "n1->n2"
    start_mono: float
    start_wall: float
    end_mono: float | None = None
    end_wall: float | None = None
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        end = f"{self.end_mono:.3f}" if self.end_mono is not None else "-"
        return (f"{self.start_wall:.3f} mono {self.start_mono:.3f}-{end} "
                f"{self.step.fault} role={self.step.role} target={self.target} "
                f"planned={self.step.duration:.1f}s {' '.join(self.notes)}").rstrip()


class Nemesis:
    """Runs a plan against a NetnsCluster (brokers, ZooKeeper and its Network) on a thread
    of its own; heal() at the end undoes everything, whatever was in progress."""

    def __init__(self, plan: list[Step], cluster, topics: list[tuple[str, int]], *,
                 history=None, log=print):
        self.plan = plan
        self.cluster = cluster
        self.topics = topics
        self.history = history
        self.log = log
        self.faults: list[FaultRecord] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.t0 = 0.0

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> "Nemesis":
        self.t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="nemesis", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop drawing faults, undo what is in progress, then heal everything."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.heal()

    def __enter__(self) -> "Nemesis":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _run(self) -> None:
        for step in self.plan:
            if self._stop.wait(max(0.0, self.t0 + step.at - time.monotonic())):
                return
            try:
                undo = self._apply(step)
            except Exception as e:          # a fault that could not be made is logged
                self._event("nemesis-error", f"{step.describe()}: {type(e).__name__}: {e}")
                continue
            self._stop.wait(step.duration)
            try:
                undo()
            except Exception as e:
                self._event("nemesis-error", f"undo {step.describe()}: {e}")
            with self._lock:
                rec = self.faults[-1]
                rec.end_mono, rec.end_wall = time.monotonic(), time.time()
            self._event("fault-stop", rec.line())
            if self._stop.is_set():
                return

    # -- resolving roles -------------------------------------------------------------------

    def _brokers(self) -> list[int]:
        return list(self.cluster.broker_ids)

    def _resolve(self, step: Step) -> int:
        ids = self._brokers()
        if step.role == "controller":
            c = self.cluster.controller()
            if c in ids:
                return c
        if step.role == "leader":
            topic, partition = self.topics[step.pick % len(self.topics)]
            lead = self.cluster.leader_of(topic, partition)
            if lead in ids:
                return lead
        return ids[step.pick % len(ids)]

    # -- faults ----------------------------------------------------------------------------

    def _record(self, step: Step, target: str) -> FaultRecord:
        rec = FaultRecord(step, target, time.monotonic(), time.time())
        with self._lock:
            self.faults.append(rec)
        self._event("fault-start", rec.line())
        return rec

    def _event(self, f: str, text: str) -> None:
        self.log(f"nemesis: {text}")
        if self.history is not None:
            self.history.event(f, text)

    def _apply(self, step: Step):
        c, net = self.cluster, self.cluster.net
        brokers = [c.node_of(i) for i in self._brokers()]
        f = step.fault
        if f == "quiet":
            self._record(step, "-")
            return lambda: None
        if f.startswith("zk-") and f != "zk-from-everyone":
            zk = c.zookeeper
            self._record(step, "zk")
            if f == "zk-pause":
                zk.pause()
                return zk.resume
            zk.kill()
            return zk.start
        if f == "zk-from-everyone":
            self._record(step, "zk|" + ",".join(brokers))
            net.isolate("zk", brokers)
            return lambda: self._heal_pairs("zk", brokers)
        if f == "majorities-ring":
            cuts = ring_cuts(brokers)
            self._record(step, " ".join(f"{a}->{b}" for a, b in cuts))
            for a, b in cuts:
                net.cut(a, b)
            return lambda: [net.heal(a, b) for a, b in cuts]
        victim = self._resolve(step)
        node = c.node_of(victim)
        others = [b for b in brokers if b != node]
        if f == "kill":
            self._record(step, f"broker {victim}")
            c.broker(victim).kill()
            return lambda: c.broker(victim).start(60)
        if f in ("pause-short", "pause-long"):
            self._record(step, f"broker {victim}")
            c.broker(victim).pause()
            return c.broker(victim).resume
        if f == "isolate":
            everyone = [n for n in net.nodes if n not in (node, "ctl")]
            self._record(step, f"broker {victim}|everyone")
            net.isolate(node, everyone)
            return lambda: self._heal_pairs(node, everyone)
        if f in ("zombie-leader", "controller-from-zk"):
            self._record(step, f"broker {victim}|zk")
            net.cut_both(node, "zk")
            return lambda: self._heal_pairs(node, ["zk"])
        if f == "leader-alone":
            # cut from ZooKeeper and its followers, clients still reach it: acks=1 writes
            # it takes now are lost once a follower leads (Jepsen's 2013 Kafka case)
            cut = others + ["zk"]
            self._record(step, f"broker {victim}|{','.join(cut)}")
            net.isolate(node, cut)
            return lambda: self._heal_pairs(node, cut)
        if f == "kill-after-lag":
            # the leader cut from its followers until its ISR is only itself (lag time and
            # more: extra is in tenths of a second), then killed while the cut still holds:
            # only out-of-sync replicas are left (an unclean election's case)
            self._record(step, f"broker {victim}|{','.join(others)} then kill")
            net.isolate(node, others)
            self._stop.wait(step.extra / 10.0)
            c.broker(victim).kill()

            def undo():
                self._heal_pairs(node, others)
                c.broker(victim).start(60)
            return undo
        if f == "leader-from-followers":
            self._record(step, f"broker {victim}|{','.join(others)}")
            net.isolate(node, others)
            return lambda: self._heal_pairs(node, others)
        if f == "one-way":
            peers = others + ["zk"]
            peer = peers[step.extra % len(peers)]
            src, dst = (node, peer) if (step.extra >> 8) % 2 == 0 else (peer, node)
            self._record(step, f"{src}->{dst} (leader {victim})")
            net.cut(src, dst)
            return lambda: net.heal(src, dst)
        raise ValueError(f"unknown fault {f!r}")

    def _heal_pairs(self, node: str, peers: list[str]) -> None:
        for p in peers:
            self.cluster.net.heal(node, p)
            self.cluster.net.heal(p, node)

    def heal(self) -> None:
        """The final heal: every cut removed, every paused process resumed, every dead one
        started again."""
        c = self.cluster
        c.net.heal()
        if c.zookeeper.paused:
            c.zookeeper.resume()
        if not c.zookeeper.running:
            c.zookeeper.start()
        for b in c.brokers:
            b.resume()
        for b in c.brokers:
            if not b.running:
                b.start(60)
        self._event("heal", f"healed at mono {time.monotonic():.3f} "
                                    f"wall {time.time():.3f}")

    def summary(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for rec in self.faults:
            counts[rec.step.fault] = counts.get(rec.step.fault, 0) + 1
        return counts
