"""A Jepsen-style run: ZooKeeper and 3 brokers in network namespaces, clients recording a
history while the nemesis breaks things, a heal, a final read, the checker's verdict.

    python -m gregor.testing.jepsen --seed 3 --duration 120 --workload queue
    python -m gregor.testing.jepsen --seed 3 --workload txn --clients confluent-kafka,aiokafka
    python -m gregor.testing.jepsen --control acks1      # must FAIL: acknowledged writes lost

Needs ZooKeeper, and root for network namespaces; without root it says so in one line and
cuts links through userspace proxies instead (--network proxy forces that). Prints the faults, the operations, the
anomalies and the availability figures, then exits 0 when the history is valid and every
replica's transaction index agrees with its log, 1 otherwise. --out DIR keeps the history
(JSON lines), the fault log, the report and the brokers' logs.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .history import History
from .history.op import key as key_of
from .nemesis import Nemesis, Step, schedule
from .netcluster import CONTROL, NetnsCluster

TOPIC = "jepsen"
PARTITIONS = 4
REPLICA_SOCKET_TIMEOUT_S = 10.0
WORKERS = 2                   # client processes (threads) per client namespace
CONTROLS = ("acks1", "unclean")
DEFAULT_CLIENTS = ("confluent-kafka", "kafka-python")
LOSS = ("lost-write", "unseen", "inconsistent-offsets")   # what a control must show


@dataclass
class RunConfig:
    seed: int = 0
    duration: float = 120.0
    workload: str = "queue"            # queue | txn
    clients: tuple = DEFAULT_CLIENTS   # client libraries, spread over the client namespaces
    client_nodes: int = 4              # client namespaces, each running WORKERS processes
    subscribe: bool = False            # consumers in subscribe mode (the group assigns)
    session_ms: int = 3000
    control: str | None = None         # acks1 | unclean: runs that must lose writes
    secure: bool = False               # the secured cluster (SASL_SSL, SCRAM, ACLs)
    network: str = "auto"              # auto | netns | proxy (the fallback without root)
    out: str | None = None
    log: object = print


@dataclass
class RunResult:
    config: RunConfig
    report: object                     # gregor.testing.history Report
    faults: list = field(default_factory=list)
    index_problems: list[str] = field(default_factory=list)
    history: History | None = None
    recovery_s: float | None = None

    @property
    def valid(self) -> bool:
        """The checker's verdict, the index check, and the cluster whole after the heal."""
        return self.report.valid and not self.index_problems and self.recovery_s is not None

    def summary(self) -> str:
        counts: dict[str, int] = {}
        for rec in self.faults:
            counts[rec.step.fault] = counts.get(rec.step.fault, 0) + 1
        lines = [f"seed {self.config.seed}, workload {self.config.workload}, clients "
                 f"{','.join(self.config.clients)}"
                 f"{', secured' if self.config.secure else ''}, "
                 f"control {self.config.control or 'none'}: "
                 f"{'VALID' if self.valid else 'INVALID'}",
                 f"faults: {len(self.faults)} ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))})",
                 (f"cluster healthy {self.recovery_s} s after the heal"
                  if self.recovery_s is not None else "cluster NOT whole again after the heal"),
                 str(self.report),
                 *_epoch_bump_lines(self.report),
                 f"txn index check: {len(self.index_problems)} problem(s)"]
        lines += [f"  {p}" for p in self.index_problems[:10]]
        return "\n".join(lines)


def _epoch_bump_lines(report) -> list[str]:
    from .history.log_evidence import EPOCH_BUMP, EXPLANATION
    found = report.anomalies.get(EPOCH_BUMP) or []
    if not found:
        return []
    lines = [f"{EPOCH_BUMP}: {len(found)} (not a broker anomaly: {EXPLANATION})"]
    for ex in found[:5]:
        copies = ", ".join(f"offset {o} pid {p['producer_id']} epoch {p['epoch']} seq "
                           f"{p['sequence']}" for o, p in ex["producers"].items())
        lines.append(f"  value {ex['value']!r} at {ex['key']}: {copies}")
    return lines


def broker_settings(cfg: RunConfig) -> dict:
    s = cfg.session_ms
    settings = {
        "zookeeper.session.timeout.ms": s,
        # KIP-537's order: a dead broker's session expires before leaders shrink ISRs
        "replica.lag.time.max.ms": 2 * s,
        "replica.fetch.wait.max.ms": 100,
        # a fetch stalled by a cut gives up and reconnects after this (Kafka: 30 s)
        "replica.socket.timeout.ms": int(REPLICA_SOCKET_TIMEOUT_S * 1000),
        "default.replication.factor": 3,
        "min.insync.replicas": 2,
        "offsets.topic.replication.factor": 3,
        "transaction.state.log.replication.factor": 3,
        "transaction.state.log.min.isr": 2,
        "group.initial.rebalance.delay.ms": 0,
    }
    if cfg.control == "unclean":
        settings["unclean.leader.election.enable"] = "true"
    return settings


def recovery_timeout(cfg: RunConfig) -> float:
    """How long the cluster may take to be whole again after the heal: sessions to expire
    and brokers to register again, a stalled fetch to hit replica.socket.timeout.ms and
    reconnect, ISRs to grow back (lag time), every broker restarted, on a loaded machine
    (a heal took 117 s at a load average of 27 on 2 cores)."""
    s = cfg.session_ms / 1000.0
    return max(300.0, 10 * (REPLICA_SOCKET_TIMEOUT_S + 3 * s))


def control_plan(cfg: RunConfig) -> list[Step]:
    """The controls. acks1: partition 0's leader cut from ZooKeeper and its followers (clients
    still reach it) long enough for a follower to be elected. unclean: the controller, leader
    of some partitions, cut from the other brokers until its ISRs are itself (min ISR 1 on
    the topic, so it keeps acknowledging), then killed: only out-of-sync followers remain and
    one is elected. It must be the controller: a leader shrinks its ISR through the
    controller (AlterPartition), so a leader cut from a controller elsewhere cannot shrink it
    and acknowledges nothing alone."""
    s = cfg.session_ms / 1000.0
    if cfg.control == "unclean":
        lag = 2 * s                                   # replica.lag.time.max.ms
        return [Step(2 * s, "kill-after-lag", 4 * s, "controller", 0, int((lag + 3 * s) * 10))]
    return [Step(2 * s, "leader-alone", 5 * s, "leader", 0)]


def _client_settings(library: str, cluster) -> dict:
    """Each library's settings for the secured cluster (the admin user), in its own names."""
    if not getattr(cluster, "secure", False):
        return {}
    if library in ("confluent-kafka", "gregor"):
        return dict(cluster.client_settings)
    if library == "kafka-python":
        s = cluster.files.kafka_python_settings(cluster.bootstrap)
        s.pop("bootstrap_servers")
        return s
    raise ValueError(f"the secured run supports confluent-kafka, kafka-python and gregor, "
                     f"not {library}")


def _workloads(cfg: RunConfig, cluster, keys: list[str], history: History) -> dict:
    """One shared-shape workload per client library; values unique across all of them."""
    from .history.workloads import workload
    values, lock = itertools.count(1), threading.Lock()
    acks = "1" if cfg.control == "acks1" else "all"
    out = {}
    for library in cfg.clients:
        w = workload(library, cluster.bootstrap, keys, history, seed=cfg.seed,
                     extra=_client_settings(library, cluster),
                     transactional=cfg.workload == "txn", subscribe=cfg.subscribe, acks=acks)
        w._values, w._values_lock = values, lock       # one sequence: values stay unique
        out[library] = w
    return out


def _start_cluster(cfg: RunConfig, root: Path, log):
    """A NetnsCluster, or where namespaces cannot be made, the proxied fallback."""
    from .netns import NetnsUnavailable, unavailable_reason
    why = "asked for" if cfg.network == "proxy" else unavailable_reason()
    if why is None:
        cluster = NetnsCluster(root, brokers=3, clients=cfg.client_nodes, session_ms=cfg.session_ms,
                               settings=broker_settings(cfg), secure=cfg.secure)
        try:
            return cluster.start()
        except NetnsUnavailable as e:
            if cfg.network == "netns":
                raise
            why = str(e)
    if cfg.network == "netns":
        raise RuntimeError(f"network namespaces unavailable: {why}")
    if cfg.secure:
        raise RuntimeError(f"the secured run needs network namespaces: {why}")
    log(f"jepsen: network namespaces unavailable ({why}); cuts go through userspace proxies "
        "(two-way, per broker link, none between clients and brokers)")
    from .proxynet import ProxyRunCluster
    return ProxyRunCluster(root, brokers=3, clients=cfg.client_nodes, session_ms=cfg.session_ms,
                           settings=broker_settings(cfg), log=log).start()


def run(cfg: RunConfig) -> RunResult:
    from .history.checker import check
    from .history.log_evidence import reclassify_duplicates, writer_libraries
    from .history.report import DEFAULT_ALLOWED
    from .txn_index_check import check_txn_indexes
    started = time.monotonic()

    def log(line: str) -> None:
        cfg.log(f"[{time.monotonic() - started:6.1f}s] {line}")
    root = Path(cfg.out) if cfg.out else Path(tempfile.mkdtemp(prefix="gregor-jepsen-"))
    root.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(root / "cluster", ignore_errors=True)      # never a previous run's data
    history = History()
    keep = cfg.out is not None
    t0 = time.monotonic()
    cluster = _start_cluster(cfg, root / "cluster", log)
    try:
        topic_config = {"min.insync.replicas": 2}
        if cfg.control == "unclean":
            topic_config = {"unclean.leader.election.enable": "true", "min.insync.replicas": 1}
        cluster.create_topic(TOPIC, PARTITIONS, 3, topic_config)
        log(f"jepsen: cluster up in {time.monotonic() - t0:.1f}s: {cluster.bootstrap} "
            f"(network {cluster.net.prefix})")
        keys = [key_of(TOPIC, p) for p in range(PARTITIONS)]
        workloads = _workloads(cfg, cluster, keys, history)
        plan = control_plan(cfg) if cfg.control else \
            schedule(cfg.seed, cfg.duration, cfg.session_ms / 1000.0)
        duration = cfg.duration if not cfg.control else \
            max(s.at + s.duration + s.extra / 10.0 for s in plan) + 2 * cfg.session_ms / 1000.0
        stop = threading.Event()
        # each client namespace runs a few processes: a send stuck on a cut leader waits
        # its 10 s without stopping the others
        libraries = list(workloads)
        threads = [cluster.net.thread(
            node, workloads[libraries[i % len(libraries)]].client, i * WORKERS + w, stop,
            name=f"client-{node}-{w}")
            for i, node in enumerate(cluster.clients) for w in range(WORKERS)]
        for t in threads:
            t.start()
        nemesis = Nemesis(plan, cluster, [(TOPIC, p) for p in range(PARTITIONS)],
                          history=history, log=log).start()
        stop.wait(duration)
        nemesis.stop()                              # undoes what is in progress, heals all
        healed = time.monotonic()
        # clients keep running through recovery: the availability figures need it
        try:
            cluster.wait_for(lambda: cluster.healthy({TOPIC: PARTITIONS}),
                             recovery_timeout(cfg), what="every broker back with full ISRs")
            recovery = round(time.monotonic() - healed, 2)
            log(f"jepsen: cluster whole again {recovery}s after the heal")
        except AssertionError as e:           # a liveness failure: still read and check
            recovery = None
            log(f"jepsen: NOT RECOVERED: {e}")
        stop.wait(2 * cfg.session_ms / 1000.0)      # some traffic on the healed cluster
        stop.set()
        for t in threads:
            t.join(60)
        log("jepsen: clients stopped; final read")
        ends = cluster.run_in(CONTROL, workloads[libraries[0]].final_read,
                              recovery_timeout(cfg))
        log(f"jepsen: final read up to {ends}")
        allow = DEFAULT_ALLOWED | ({"poll-skip", "nonmonotonic-poll"} if cfg.subscribe
                                   else frozenset())
        data_dirs = [str(b.data_dir) for b in cluster.brokers]
        # a duplicate the logs show to be librdkafka's re-send under a bumped epoch is the
        # client's doing: reported apart, not a broker anomaly (docs/jepsen.md)
        report = reclassify_duplicates(
            check(history, allow=allow), data_dirs,
            writer_libraries(history, {lib: w.processes for lib, w in workloads.items()}))
        index_problems = check_txn_indexes(data_dirs)
        result = RunResult(cfg, report, list(nemesis.faults), index_problems, history,
                           recovery)
        if keep:
            history.dump(root / "history.jsonl")
            (root / "faults.log").write_text("\n".join(r.line() for r in nemesis.faults) + "\n")
            (root / "report.json").write_text(json.dumps(report.to_json(), indent=1,
                                                         default=repr))
        return result
    finally:
        cluster.stop()
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gregor.testing.jepsen",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--duration", type=float, default=120.0, help="seconds of faults")
    ap.add_argument("--workload", choices=("queue", "txn"), default="queue")
    ap.add_argument("--clients", default=",".join(DEFAULT_CLIENTS),
                    help="client libraries, comma-separated: confluent-kafka, kafka-python, "
                         "aiokafka, gregor")
    ap.add_argument("--client-nodes", type=int, default=4,
                    help=f"client namespaces, each running {WORKERS} client processes")
    ap.add_argument("--subscribe", action="store_true",
                    help="consumers subscribe (poll-skip and nonmonotonic-poll allowed)")
    ap.add_argument("--session-ms", type=int, default=3000)
    ap.add_argument("--control", choices=CONTROLS, default=None,
                    help="a run that must lose acknowledged writes")
    ap.add_argument("--secure", action="store_true",
                    help="the secured cluster: SASL_SSL, SCRAM users, ACL authorizer")
    ap.add_argument("--out", default=None, help="keep history, faults, report and logs here")
    ap.add_argument("--network", choices=("auto", "netns", "proxy"), default="auto",
                    help="netns needs root; proxy is the fallback auto picks without it")
    args = ap.parse_args(argv)
    cfg = RunConfig(seed=args.seed, duration=args.duration, workload=args.workload,
                    clients=tuple(c.strip() for c in args.clients.split(",") if c.strip()),
                    client_nodes=args.client_nodes, subscribe=args.subscribe,
                    session_ms=args.session_ms, control=args.control,
                    secure=args.secure, network=args.network, out=args.out)
    result = run(cfg)
    print(result.summary())
    if cfg.control:
        # acknowledged data gone: never read (lost-write, unseen) or read, then replaced
        # at its offset by a truncating leader (inconsistent-offsets)
        lost = {n: len(result.report.anomalies.get(n) or []) for n in LOSS}
        found = {n: c for n, c in lost.items() if c}
        print(f"control {cfg.control}: acknowledged writes lost: "
              f"{found if found else 'NOT found'}")
        return 0 if found and not result.report.valid else 1
    return 0 if result.valid else 1


if __name__ == "__main__":
    sys.exit(main())
