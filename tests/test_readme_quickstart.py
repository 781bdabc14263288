"""README.md's quick start ("Two commands", the sh block that starts the broker by hand) run as a
new user runs it: from the repository root, with .venv/bin/gregor, read from README.md itself,
so an edit to those lines is tested as it stands (or, if their shape changes, fails here until
this file follows).

Only what parallel test lanes need is changed: the ports (9092, 19092) become free ones, the
data directories (/tmp/gregor-data, /tmp/gregor-cluster) the test's own, and the cluster's
Schema Registry, which `gregor cluster` starts on the fixed port 8081 by default, gets a free
port too. The first four lines run as one bash script (so `&` and `kill $!` work as written)
under `set -e`, which stops at the first failing line instead of running on; the cluster line
runs in a session of its own and is stopped the way Ctrl-C stops it, SIGINT to its process
group. Neither may leave a broker or ZooKeeper process behind.
"""
from __future__ import annotations

import os
import queue
import re
import shlex
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from gregor.broker.cluster import zookeeper_server as zk
from tests.support.zookeeper import unavailable

pytestmark = pytest.mark.interop

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GREGOR = ROOT / ".venv" / "bin" / "gregor"
FIRST_COMMAND = ".venv/bin/gregor broker --listen 127.0.0.1:9092"

# Liveness bounds for a loaded 2-core machine (a full test run beside this one), none of them
# an assertion on speed: the broker's start and the two clients (the producer waits up to 60 s
# for the broker, README's --connect-timeout); a broker's clean shutdown; `gregor cluster`'s
# own waits (ZooKeeper 30 s, each broker 120 s, the cluster forming 60 s); its Ctrl-C stops the
# brokers one after the other (up to 60 s each) and then ZooKeeper (up to 30 s).
SCRIPT_TIMEOUT_S = 240
SHUTDOWN_TIMEOUT_S = 60
CLUSTER_READY_TIMEOUT_S = 240
CLIENT_TIMEOUT_S = 120
CLUSTER_EXIT_TIMEOUT_S = 300

CHANGED = ("README.md's quick start changed shape; update tests/test_readme_quickstart.py to "
           "follow it: ")


# -- reading the README ------------------------------------------------------------------------

def quickstart_lines() -> list[str]:
    """The lines of the ```sh block of README.md whose first line starts the broker."""
    blocks = re.findall(r"^```sh\n(.*?)^```", README.read_text(), re.M | re.S)
    found = [b.splitlines() for b in blocks if b.startswith(FIRST_COMMAND)]
    if len(found) != 1:
        pytest.fail(CHANGED + f"expected one ```sh block starting with {FIRST_COMMAND!r}, "
                    f"found {len(found)}", pytrace=False)
    return found[0]


def check_shape(lines: list[str]) -> None:
    expected = [
        (FIRST_COMMAND, "--data-dir /tmp/gregor-data &"),
        ("seq 10 | .venv/bin/gregor produce events --bootstrap-server 127.0.0.1:9092", ""),
        (".venv/bin/gregor consume events --from-beginning --max-messages 10 "
         "--bootstrap-server 127.0.0.1:9092", ""),
        ("kill $!", ""),
        (".venv/bin/gregor cluster --brokers 3 --port 19092 --data-dir /tmp/gregor-cluster", ""),
    ]
    if len(lines) != len(expected):
        pytest.fail(CHANGED + f"expected {len(expected)} lines, found {len(lines)}: {lines}",
                    pytrace=False)
    for line, (start, contains) in zip(lines, expected):
        if not line.startswith(start) or contains not in line:
            pytest.fail(CHANGED + f"expected a line starting with {start!r}"
                        + (f" and containing {contains!r}" if contains else "")
                        + f", found {line!r}", pytrace=False)


def substitute(line: str, replacements: dict[str, str]) -> str:
    """`line` with each regex of `replacements` replaced; fails if a port-like number or a
    /tmp path is left besides the substituted values."""
    rest = line.split("#", 1)[0]
    for pattern, value in replacements.items():
        line = re.sub(pattern, value, line)
        rest = re.sub(pattern, "", rest)
    leftover = re.search(r"\b\d{4,5}\b|/tmp/", rest)
    if leftover:
        pytest.fail(CHANGED + f"{line!r} still holds {leftover.group()!r} (a fixed port or "
                    "a shared directory); substitute it too", pytrace=False)
    return line


# -- processes ---------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_ports(n: int, attempts: int = 100) -> int:
    """A base port such that base..base+n-1 are all free (at the time of asking)."""
    for _ in range(attempts):
        base = free_port()
        held = []
        try:
            for p in range(base, base + n):
                s = socket.socket()
                held.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in held:
                s.close()
    pytest.fail(f"no {n} consecutive free ports found in {attempts} attempts")


def running(pid: int, marker: str) -> bool:
    """Whether process `pid` runs (a zombie does not) with `marker` in its command line (so a
    reused pid is not mistaken for ours)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
            errors="replace")
    except OSError:
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state != "Z" and marker in cmdline


def processes_with(marker: str) -> list[tuple[int, str]]:
    """Every running process whose command line holds `marker` (e.g. a test's data dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and running(int(entry.name), marker):
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace")
            found.append((int(entry.name), cmdline.strip()))
    return found


def wait_gone(pids: list[int], marker: str, timeout: float) -> list[int]:
    """The pids still running after up to `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        left = [p for p in pids if running(p, marker)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def kill_all(pids: list[int], marker: str) -> None:
    for pid in pids:
        if running(pid, marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def require_venv_gregor() -> None:
    if not os.access(GREGOR, os.X_OK):
        pytest.fail(f"the quick start runs .venv/bin/gregor, which {GREGOR} is not: "
                    "create it with `make venv`", pytrace=False)


# -- the broker by hand ------------------------------------------------------------------------

@pytest.mark.timeout(SCRIPT_TIMEOUT_S + SHUTDOWN_TIMEOUT_S + 60)
def test_broker_produce_consume_kill_as_written(tmp_path):
    lines = quickstart_lines()
    check_shape(lines)
    require_venv_gregor()
    port = free_port()
    data = tmp_path / "gregor-data"
    marker = str(data)
    pidfile = tmp_path / "broker.pid"
    out_path, err_path = tmp_path / "stdout", tmp_path / "stderr"
    body = [substitute(line, {r"\b9092\b": str(port),
                              r"/tmp/gregor-data": shlex.quote(str(data))})
            for line in lines[:4]]
    # the EXIT trap keeps the exit status; it only tells this test the broker's pid
    script = "\n".join([f"trap 'echo \"$!\" > {shlex.quote(str(pidfile))}' EXIT", "set -e",
                        *body]) + "\n"

    broker_pid = None
    try:
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen(["bash", "-c", script], cwd=ROOT, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=err)
            try:
                code = proc.wait(SCRIPT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
                timed_out = True
            else:
                timed_out = False

        def output() -> str:
            return (f"\n--- script ---\n{script}--- stdout ---\n{out_path.read_text()}"
                    f"--- stderr ---\n{err_path.read_text(errors='replace')}")

        assert not timed_out, f"the quick start did not finish within {SCRIPT_TIMEOUT_S}s" \
            + output()
        text = pidfile.read_text().strip() if pidfile.exists() else ""
        broker_pid = int(text) if text.isdigit() else None
        assert code == 0, f"the quick start exited with {code}" + output()
        assert broker_pid is not None, "the script did not report the broker's pid" + output()
        left = wait_gone([broker_pid], marker, SHUTDOWN_TIMEOUT_S)
        assert not left, (f"the broker (pid {broker_pid}) still runs {SHUTDOWN_TIMEOUT_S}s "
                          "after `kill $!`" + output())
        assert not processes_with(marker), f"left behind: {processes_with(marker)}" + output()

        stdout = out_path.read_text().splitlines()
        ready = f"gregor broker ready on 127.0.0.1:{port}"
        # the broker's stdout is the script's too: its ready line, once, beside consume's lines
        assert stdout.count(ready) == 1, f"expected {ready!r} once on stdout" + output()
        assert [line for line in stdout if line != ready] == [str(i) for i in range(1, 11)], \
            "expected consume to print the lines 1..10 (and nothing else)" + output()
    finally:
        kill_all([broker_pid] if broker_pid else [], marker)
        kill_all([pid for pid, _ in processes_with(marker)], marker)


# -- the cluster -------------------------------------------------------------------------------

class Lines:
    """A process's stdout, line by line, read on a thread (the test waits on it with a
    timeout); everything read is kept for the failure message."""

    def __init__(self, stream):
        self.seen: list[str] = []
        self._q: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream):
        for raw in stream:
            self._q.put(raw.decode(errors="replace").rstrip("\n"))
        self._q.put(None)

    def drain(self, timeout: float) -> None:
        """Read on until EOF, at most `timeout` seconds."""
        self.wait_for(r"(?!)", timeout)         # a pattern that never matches

    def wait_for(self, pattern: str, timeout: float) -> re.Match | None:
        deadline = time.monotonic() + timeout
        for line in self.seen:
            if m := re.search(pattern, line):
                return m
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._q.get(timeout=left)
            except queue.Empty:
                return None
            if line is None:
                self._q.put(None)          # at EOF: later waits end at once too
                return None
            self.seen.append(line)
            if m := re.search(pattern, line):
                return m
        return None


@pytest.mark.timeout(CLUSTER_READY_TIMEOUT_S + 3 * CLIENT_TIMEOUT_S + CLUSTER_EXIT_TIMEOUT_S)
def test_cluster_as_written_serves_and_stops_on_ctrl_c(tmp_path):
    lines = quickstart_lines()
    check_shape(lines)
    require_venv_gregor()
    why = zk.missing_reason()
    if why:
        unavailable(why)          # skips, or fails under CI=true
    base = free_ports(3)
    data = tmp_path / "gregor-cluster"
    marker = str(data)
    line = substitute(lines[4], {r"\b19092\b": str(base),
                                 r"/tmp/gregor-cluster": shlex.quote(str(data))})
    argv = shlex.split(line, comments=True) + ["--schema-registry-port", str(free_port())]
    errors = tmp_path / "cluster.stderr"

    pids: list[int] = []
    proc = None
    try:
        with open(errors, "wb") as err:
            # a session of its own: SIGINT to its group is what Ctrl-C in a terminal sends
            proc = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=err, start_new_session=True)
        out = Lines(proc.stdout)

        def output() -> str:
            logs = "".join(f"--- {p.name} (tail) ---\n{p.read_text(errors='replace')[-4000:]}\n"
                           for p in sorted(data.glob("*.log")))
            return (f"\n--- command ---\n{argv}\n--- stdout ---\n" + "\n".join(out.seen)
                    + f"\n--- stderr ---\n{errors.read_text(errors='replace')[-4000:]}\n"
                    + logs)

        endpoints = ",".join(f"127.0.0.1:{base + i}" for i in range(3))
        ready = out.wait_for(r"^gregor cluster ready on (\S+)$", CLUSTER_READY_TIMEOUT_S)
        pids = [int(p) for p in re.findall(r"ready on \S+ \(pid (\d+)", "\n".join(out.seen))]
        assert ready, (f"no `gregor cluster ready on ...` line within "
                       f"{CLUSTER_READY_TIMEOUT_S}s" + output())
        assert ready.group(1) == endpoints, f"expected the brokers on {endpoints}" + output()
        assert len(pids) == 4, "expected ZooKeeper's and 3 brokers' pids" + output()
        # the Schema Registry starts after the ready line; let it finish before Ctrl-C
        assert out.wait_for(r"^gregor schema registry ready on ", CLIENT_TIMEOUT_S), \
            "no `gregor schema registry ready on ...` line" + output()

        # a record through broker 1 alone, with the CLI the quick start uses
        bootstrap = f"127.0.0.1:{base + 1}"
        client = dict(cwd=ROOT, capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S)
        sent = subprocess.run([".venv/bin/gregor", "produce", "readme-cluster",
                               "--bootstrap-server", bootstrap], input="hello cluster\n",
                              **client)
        assert sent.returncode == 0, sent.stdout + sent.stderr + output()
        got = subprocess.run([".venv/bin/gregor", "consume", "readme-cluster",
                              "--from-beginning", "--max-messages", "1",
                              "--bootstrap-server", bootstrap], **client)
        assert got.returncode == 0, got.stdout + got.stderr + output()
        assert got.stdout.splitlines() == ["hello cluster"], got.stdout + got.stderr + output()

        os.killpg(proc.pid, signal.SIGINT)
        try:
            code = proc.wait(CLUSTER_EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"`gregor cluster` still runs {CLUSTER_EXIT_TIMEOUT_S}s after Ctrl-C"
                        + output())
        out.drain(10)                      # what it printed last, for the messages below
        assert code == 0, f"`gregor cluster` exited with {code} after Ctrl-C" + output()
        left = [p for p in pids if running(p, marker)]
        assert not left, f"still running after `gregor cluster` exited: {left}" + output()
        assert not processes_with(marker), f"left behind: {processes_with(marker)}" + output()
    finally:
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        kill_all(pids, marker)
        kill_all([pid for pid, _ in processes_with(marker)], marker)
