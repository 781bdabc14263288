"""gregor.testing's costs, side by side in one run (never timed tests: see tests/testing).

    .venv/bin/python benchmarks/bench_testing.py [--starts 30] [--cold 7] [--records 300000]
        [--sections 0,1,2,3,4] [--busy-disk] [--baseline DIR]

0. The pytest plugin's import, what a run using none of its fixtures pays.
1. In-process Broker: start() to the first Metadata answered to confluent-kafka (an
   AdminClient's list_topics), and stop(): median and p90 over --starts cycles in this process
   (gregor already imported), and over --cold fresh interpreters (each pays for importing the
   broker), once with bytecode cached (as after pip install) and once without (as under
   PYTHONDONTWRITEBYTECODE=1, when gregor runs from a source tree); for those also the CPU
   time the process spent (all threads), which a loaded machine does not inflate.
2. BrokerProcess: start to the first Metadata, and stop, beside it (a child interpreter).
3. Per-test overhead of gregor_broker_session + unique_topic: pytest runs N trivial tests with
   the fixture and N without; the difference of the median per-test times. With --busy-disk,
   again while another process writes and fsyncs 4 MiB at a time to the same file system
   (the disk of a machine that runs other work), where each fsync of a topic creation waits.
   With --baseline DIR, this tree against another checkout's source tree (git worktree or
   git archive of an older commit, compiled modules copied in), runs alternating.
4. Produce throughput (confluent-kafka, acks=1, linger.ms=5, 100-byte values) against a broker
   process without the interceptor, with it installed and no fault set (no request log), and
   with the default request log: msgs/s and the broker's CPU seconds, with their ratios to
   none; rounds alternate, the best of each kept (CPU is the steadier figure under load).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def summary(values: list[float]) -> str:
    return (f"median {statistics.median(values) * 1000:7.1f} ms   "
            f"p90 {pct(values, 0.9) * 1000:7.1f} ms   (n={len(values)})")


def metadata(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient
    AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30)


# -- 0. the plugin's import -----------------------------------------------------------------

PLUGIN = ("import time, pytest; t = time.perf_counter(); import gregor.testing.plugin; "
          "print(time.perf_counter() - t)")


def plugin_imports(n: int) -> list[float]:
    """What the pytest plugin costs a run that uses none of its fixtures: its import, after
    pytest's own (bytecode as the environment has it)."""
    return [float(subprocess.run([sys.executable, "-c", PLUGIN], capture_output=True,
                                 text=True, check=True, cwd=str(REPO)).stdout)
            for _ in range(n)]


# -- 1. in-process starts -------------------------------------------------------------------

def warm_starts(n: int) -> tuple[list[float], list[float]]:
    from gregor.testing import Broker
    with Broker() as b:                      # imports, first-use singletons
        metadata(b.bootstrap_servers)
    starts, stops, alone = [], [], []
    for _ in range(n):
        t0 = time.perf_counter()
        b = Broker().start()
        ta = time.perf_counter()
        metadata(b.bootstrap_servers)
        t1 = time.perf_counter()
        b.stop()
        starts.append(t1 - t0)
        alone.append(ta - t0)
        stops.append(time.perf_counter() - t1)
    return starts, stops, alone


COLD = textwrap.dedent("""
    import json, time
    t0 = time.perf_counter()
    from gregor.testing import Broker
    from confluent_kafka.admin import AdminClient
    t1, c1 = time.perf_counter(), time.process_time()
    b = Broker().start()
    t2 = time.perf_counter()
    AdminClient({"bootstrap.servers": b.bootstrap_servers}).list_topics(timeout=30)
    t3, c3 = time.perf_counter(), time.process_time()
    b.stop()
    t4 = time.perf_counter()
    print(json.dumps({"imports": t1 - t0, "start": t2 - t1, "metadata": t3 - t2,
                      "to_metadata": t3 - t1, "cpu": c3 - c1, "stop": t4 - t3}))
""")


def cold_starts(n: int, cached: bool) -> list[dict]:
    env = dict(os.environ)
    pyc = tempfile.mkdtemp(prefix="bench-pyc-")
    if cached:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pyc
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    runs = []
    for i in range(n + (1 if cached else 0)):   # a cached run first fills the cache
        out = subprocess.run([sys.executable, "-c", COLD], env=env, capture_output=True,
                             text=True, check=True, cwd=str(REPO)).stdout
        if cached and i == 0:
            continue
        runs.append(json.loads(out.strip().splitlines()[-1]))
    return runs


# -- 2. process broker ------------------------------------------------------------------------

def process_starts(n: int, faults: bool) -> tuple[list[float], list[float]]:
    from gregor.testing import BrokerProcess
    starts, stops = [], []
    for _ in range(n):
        b = BrokerProcess(faults=faults)
        t0 = time.perf_counter()
        b.start()
        metadata(b.bootstrap_servers)
        t1 = time.perf_counter()
        b.stop()
        stops.append(time.perf_counter() - t1)
        starts.append(t1 - t0)
        b.close()
    return starts, stops


# -- 3. per-test overhead -------------------------------------------------------------------

_TIMING_CONFTEST = """
import json, os, time
import pytest
_times = {}

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    t0 = time.perf_counter()
    yield
    _times[item.nodeid] = time.perf_counter() - t0

def pytest_sessionfinish(session):
    with open(os.environ["BENCH_TIMES"], "w") as f:
        json.dump(_times, f)
"""


_BUSY_WRITER = """
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
chunk = os.urandom(4 << 20)
while True:
    for _ in range(16):                  # 64 MiB, then start over: bounded on disk
        os.write(fd, chunk)
        os.fsync(fd)
    os.lseek(fd, 0, os.SEEK_SET)
"""


class BusyDisk:
    """Another process writing and fsyncing 4 MiB at a time in the temporary directory's file
    system, for as long as the with block lasts."""

    def __enter__(self):
        self.path = Path(tempfile.mkdtemp(prefix="bench-busy-")) / "busy"
        self.proc = subprocess.Popen([sys.executable, "-c", _BUSY_WRITER, str(self.path)])
        time.sleep(0.5)
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()
        self.path.unlink(missing_ok=True)
        self.path.parent.rmdir()


def per_test_overhead(n: int, pythonpath: str | None = None) -> tuple[float, float]:
    """Median time per test (setup, call and teardown) with and without the fixtures; the
    first test with them, which starts the session broker, is left out. pythonpath: run
    another checkout's gregor (--baseline)."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-plugin-"))
    (tmp / "conftest.py").write_text(_TIMING_CONFTEST)
    (tmp / "test_with.py").write_text(
        f"import pytest\n@pytest.mark.parametrize('i', range({n + 1}))\n"
        "def test_with(gregor_broker_session, unique_topic, i):\n    assert unique_topic\n")
    (tmp / "test_without.py").write_text(
        f"import pytest\n@pytest.mark.parametrize('i', range({n}))\n"
        "def test_without(i):\n    assert i >= 0\n")
    times_file = tmp / "times.json"
    env = dict(os.environ, BENCH_TIMES=str(times_file))
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp)],
                   cwd=str(tmp), check=True, capture_output=True, env=env)
    times = json.loads(times_file.read_text())
    with_ = [t for k, t in times.items() if "test_with[" in k and not k.endswith("[0]")]
    without = [t for k, t in times.items() if "test_without[" in k]
    return statistics.median(with_), statistics.median(without)


# -- 4. produce throughput --------------------------------------------------------------------

def produce_rate(bootstrap: str, topic: str, records: int, extra: dict) -> float:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5,
                  "queue.buffering.max.messages": 1_000_000, **extra})
    value = b"v" * 100
    t0 = time.perf_counter()
    for i in range(records):
        while True:
            try:
                p.produce(topic, value, key=b"k%09d" % i, partition=0)
                break
            except BufferError:
                p.poll(0.01)
    p.flush(120)
    return records / (time.perf_counter() - t0)


def cpu_seconds(pid: int) -> float:
    """user + system CPU seconds of a process (and its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def produce_ratios(records: int, repeat: int, extra: dict) -> dict[str, tuple[float, float]]:
    from confluent_kafka.admin import AdminClient, NewTopic

    from gregor.testing import BrokerProcess
    kinds = {"none": dict(faults=False), "installed, no fault": dict(
        faults=True, env={"GREGOR_TESTING_REQUEST_LOG": "0"}),
        "installed + request log": dict(faults=True)}
    brokers = {k: BrokerProcess(**v).start() for k, v in kinds.items()}
    best: dict[str, float] = {k: 0.0 for k in kinds}
    cpu: dict[str, float] = {k: float("inf") for k in kinds}
    try:
        for r in range(repeat):
            for kind, b in brokers.items():
                topic = f"bench-{r}-{len(extra)}"
                admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
                for f in admin.create_topics([NewTopic(topic, 1, 1)]).values():
                    f.result(30)
                c0 = cpu_seconds(b.pid)
                best[kind] = max(best[kind], produce_rate(b.bootstrap_servers, topic, records,
                                                          extra))
                cpu[kind] = min(cpu[kind], cpu_seconds(b.pid) - c0)
    finally:
        for b in brokers.values():
            b.close()
    return {k: (best[k], cpu[k]) for k in kinds}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--starts", type=int, default=30)
    ap.add_argument("--cold", type=int, default=7)
    ap.add_argument("--process", type=int, default=5)
    ap.add_argument("--tests", type=int, default=200)
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sections", default="0,1,2,3,4", help="which parts to run")
    ap.add_argument("--busy-disk", action="store_true",
                    help="section 3 also with another process writing and fsyncing")
    ap.add_argument("--baseline", metavar="DIR",
                    help="section 3 against another checkout of gregor too (its source tree, "
                         "e.g. from git worktree or git archive), runs alternating, --repeat "
                         "rounds, with the ratio")
    args = ap.parse_args()
    sections = {int(x) for x in args.sections.split(",") if x.strip()}

    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall times grow "
          "with it; CPU times do not)")
    if 0 in sections:
        print(f"0. importing the pytest plugin (after pytest): "
              f"{summary(plugin_imports(args.cold))}")
    if 1 in sections:
        section_1(args)
    if 2 in sections:
        print("2. BrokerProcess: start to the first Metadata, and stop")
        for faults in (False, True):
            s, t = process_starts(args.process, faults)
            label = "with control channel" if faults else "plain gregor broker "
            print(f"   {label}: start {summary(s)}; stop median "
                  f"{statistics.median(t) * 1000:.0f} ms")
    if 3 in sections:
        section_3(args)
    if 4 in sections:
        section_4(args)
    return 0


def section_1(args) -> None:
    print("1. in-process Broker: start() to the first Metadata answered to confluent-kafka")
    starts, stops, alone = warm_starts(args.starts)
    print(f"   in this process (gregor imported): {summary(starts)}")
    print(f"      of which start() alone:         {summary(alone)} (the rest is the client's "
          "own set-up and round trip)")
    print(f"   stop():                            {summary(stops)}")
    for cached in (True, False):
        runs = cold_starts(args.cold, cached)
        label = "bytecode cached" if cached else "no bytecode cache"
        print(f"   fresh interpreter, {label:17s}: "
              f"{summary([r['to_metadata'] for r in runs])}")
        print(f"      of which start() {statistics.median([r['start'] for r in runs]) * 1000:.1f}"
              f" ms, metadata {statistics.median([r['metadata'] for r in runs]) * 1000:.1f} ms;"
              f" before it, import gregor.testing + confluent_kafka "
              f"{statistics.median([r['imports'] for r in runs]) * 1000:.1f} ms; stop "
              f"{statistics.median([r['stop'] for r in runs]) * 1000:.1f} ms; CPU time to the "
              f"Metadata {statistics.median([r['cpu'] for r in runs]) * 1000:.1f} ms "
              "(steadier than wall time on a shared machine)")


def section_3(args) -> None:
    print("3. per-test overhead of gregor_broker_session + unique_topic")
    for busy in (False, True) if args.busy_disk else (False,):
        disk = "busy disk" if busy else "idle disk"
        with (BusyDisk() if busy else contextlib.nullcontext()):
            if not args.baseline:
                with_, without = per_test_overhead(args.tests)
                print(f"   {disk}: median per test {with_ * 1000:.2f} ms with, "
                      f"{without * 1000:.2f} ms without: overhead "
                      f"{(with_ - without) * 1000:.2f} ms (creating a topic makes the topic "
                      "list durable: fsyncs)")
                continue
            runs: dict[str, list[float]] = {"this": [], "baseline": []}
            for _ in range(args.repeat):          # alternating: the load drifts for both
                for kind in ("baseline", "this"):
                    with_, without = per_test_overhead(
                        args.tests, args.baseline if kind == "baseline" else None)
                    runs[kind].append(with_ - without)
            this, base = (statistics.median(runs[k]) for k in ("this", "baseline"))
            print(f"   {disk}: overhead per test, median of {args.repeat} rounds: this "
                  f"{this * 1000:.2f} ms (rounds {_ms(runs['this'])}), baseline "
                  f"{base * 1000:.2f} ms (rounds {_ms(runs['baseline'])}): ratio "
                  f"{this / base:.2f}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


def _ms(values: list[float]) -> str:
    return ", ".join(f"{v * 1000:.1f}" for v in values)


def section_4(args) -> None:
    for label, records, extra in (
            (f"{args.records} records batched (linger.ms=5)", args.records, {}),
            (f"{args.records // 15} records, one per request", args.records // 15,
             {"linger.ms": 0, "batch.num.messages": 1, "max.in.flight": 5})):
        print(f"4. produce throughput, {label}, best of {args.repeat}")
        rates = produce_ratios(records, args.repeat, extra)
        base, base_cpu = rates["none"]
        for kind, (rate, cpu) in rates.items():
            print(f"   {kind:24s}: {rate:10,.0f} msgs/s (ratio to none {rate / base:.3f});  "
                  f"broker CPU {cpu:.2f} s (ratio {cpu / base_cpu:.3f})")


if __name__ == "__main__":
    sys.exit(main())
