"""A `gregor broker` running as a child process, for integration, interop and fault tests.

    with BrokerProcess(data_dir) as b:      # starts `python -m gregor broker --listen 127.0.0.1:0`
        client(bootstrap_servers=b.bootstrap)
        b.kill(); b.start()                  # kill -9, then start again on the same dir and port

The broker prints `gregor broker ready on HOST:PORT` once it accepts connections; start() waits
for that line. Everything the broker writes (stdout and stderr) goes to `<data_dir>.log` next to
the data directory, so a failing test can show it with `log_text()`.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

READY = re.compile(r"gregor broker ready on (\S+):(\d+)")
LISTENER = re.compile(r"gregor broker listener (\S+) on (\S+):(\d+)")
REPO_ROOT = Path(__file__).resolve().parents[2]


class BrokerProcess:
    def __init__(self, data_dir: str | os.PathLike | None = None, *, settings: dict | None = None,
                 extra_args: list[str] | tuple = (), broker_id: int | None = None,
                 metrics_port: int | None = None, env: dict | None = None):
        if data_dir is None:
            data_dir = tempfile.mkdtemp(prefix="gregor-broker-")
        self.data_dir = Path(data_dir)
        self.settings = dict(settings or {})
        self.extra_args = list(extra_args)
        self.broker_id = broker_id
        self.metrics_port = metrics_port
        self.env = env
        self.host = "127.0.0.1"
        self.port = 0
        self.listeners: dict[str, int] = {}   # listener name -> port (several listeners)
        self.proc: subprocess.Popen | None = None
        self.log_path = self.data_dir.with_name(self.data_dir.name + ".log")
        self._lines: list[str] = []
        self._pump: threading.Thread | None = None
        self._ready = threading.Event()

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "gregor", "broker", "--listen", f"127.0.0.1:{self.port}",
               "--data-dir", str(self.data_dir)]
        if self.broker_id is not None:
            cmd += ["--broker-id", str(self.broker_id)]
        if self.metrics_port is not None:
            cmd += ["--metrics-port", str(self.metrics_port)]
        for k, v in self.settings.items():
            cmd += ["--set", f"{k}={v}"]
        return cmd + self.extra_args

    def start(self, timeout: float = 30.0) -> "BrokerProcess":
        """Start the broker (port 0 on the first start, the same port afterwards) and wait
        until it prints its ready line."""
        if self.running:
            raise RuntimeError("broker is already running; stop() or kill() it first")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        env["PYTHONUNBUFFERED"] = "1"
        if self.env:
            env.update(self.env)
        self._ready.clear()
        self._lines = []
        log = open(self.log_path, "a", buffering=1)
        log.write(f"--- {' '.join(self.command())}\n")
        self.proc = subprocess.Popen(self.command(), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=env, cwd=str(REPO_ROOT), text=True, bufsize=1)
        self._pump = threading.Thread(target=self._read_output, args=(self.proc, log),
                                      daemon=True, name="broker-output")
        self._pump.start()
        deadline = time.monotonic() + timeout
        while not self._ready.wait(0.05):
            if self.proc.poll() is not None:
                self._pump.join(2)
                raise RuntimeError(f"broker exited with code {self.proc.returncode} before it "
                                   f"was ready; its output:\n{self.log_text()[-4000:]}")
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"broker was not ready after {timeout}s; its output:\n"
                                   f"{self.log_text()[-4000:]}")
        return self

    def _read_output(self, proc: subprocess.Popen, log) -> None:
        # Drain the pipe for the whole life of the process so the broker never blocks on a
        # full pipe, and keep everything in the log file.
        try:
            for line in proc.stdout:
                log.write(line)
                self._lines.append(line)
                if not self._ready.is_set():
                    lm = LISTENER.search(line)
                    if lm:
                        self.listeners[lm.group(1)] = int(lm.group(3))
                    m = READY.search(line)
                    if m:
                        self.host, self.port = m.group(1), int(m.group(2))
                        self._ready.set()
        finally:
            log.close()

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait for a graceful exit; returns the exit code (kills after timeout)."""
        return self._signal(signal.SIGTERM, timeout)

    def interrupt(self, timeout: float = 30.0) -> int:
        """SIGINT (Ctrl-C) and wait; returns the exit code."""
        return self._signal(signal.SIGINT, timeout)

    def kill(self) -> int:
        """SIGKILL (kill -9): no shutdown work at all, as in a crash."""
        return self._signal(signal.SIGKILL, 10.0)

    def _signal(self, sig: int, timeout: float) -> int:
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self._pump is not None:
            self._pump.join(5)
        return self.proc.returncode

    def restart(self, timeout: float = 30.0, *, hard: bool = False) -> "BrokerProcess":
        """Stop (SIGTERM, or SIGKILL when hard) and start again on the same data dir and port."""
        if hard:
            self.kill()
        else:
            self.stop()
        return self.start(timeout)

    # -- diagnostics ----------------------------------------------------------------------

    def output(self) -> str:
        """Everything the current process has printed so far."""
        return "".join(self._lines)

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def __enter__(self) -> "BrokerProcess":
        if not self.running:
            self.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.running:
            self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"BrokerProcess({self.bootstrap}, {self.data_dir}, {state})"
