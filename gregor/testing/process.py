"""`BrokerProcess`: a gregor broker as a child process, for crash, restart and cluster tests.

    with BrokerProcess() as b:                 # starts it on 127.0.0.1 and a free port
        client(bootstrap_servers=b.bootstrap_servers)
        b.kill(); b.start()                    # kill -9, then start again on the same dir and port
        b.pause(); b.resume()                  # SIGSTOP / SIGCONT: a broker that hangs

The broker prints `gregor broker ready on HOST:PORT` once it accepts connections; start() waits
for that line. Everything it writes (stdout and stderr) goes to `<data_dir>.log` next to the
data directory, so a failing test can show it with `log_text()`. With faults=True (the default)
it runs as `python -m gregor.testing.child`, which is `gregor broker` plus the control channel
that carries `faults`, `hold`, `intercept`, `requests` and `limit_versions` to it; faults end
with the process (a restart starts without any).
"""
from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from .faults import FaultTarget

READY = re.compile(r"gregor broker ready on (\S+):(\d+)")
CONTROL = re.compile(r"gregor testing control on (\d+)")
LISTENER = re.compile(r"gregor broker listener (\S+) on (\S+):(\d+)")
# The directory holding the gregor package: children import the same gregor as the test.
REPO_ROOT = Path(__file__).resolve().parents[2]


class BrokerProcess(FaultTarget):
    def __init__(self, data_dir: str | os.PathLike | None = None, *,
                 config: dict | None = None, settings: dict | None = None,
                 extra_args: list[str] | tuple = (), broker_id: int | None = None,
                 metrics_port: int | None = None, env: dict | None = None,
                 faults: bool = True, proxy: bool = False):
        """config (or its older name settings): broker settings by Kafka's names, passed as
        --set. faults: open the control channel for fault injection. proxy: clients reach the
        broker through a TcpProxy (self.proxy) that it advertises."""
        self._tmp = None
        if data_dir is None:
            self._tmp = tempfile.mkdtemp(prefix="gregor-broker-")
            data_dir = Path(self._tmp) / "data"
        self.data_dir = Path(data_dir)
        self.settings = dict(settings or {})
        if config:
            from .inprocess import check_settings
            self.settings.update(check_settings(config))     # a typo fails here, not later
        self.extra_args = list(extra_args)
        self.broker_id = broker_id
        self.metrics_port = metrics_port
        self.env = env
        self.with_faults = faults
        self.host = "127.0.0.1"
        self.port = 0
        self.listeners: dict[str, int] = {}   # listener name -> port (with several listeners)
        self.proc: subprocess.Popen | None = None
        self.log_path = self.data_dir.with_name(self.data_dir.name + ".log")
        self.proxy = None
        if proxy:
            from .proxy import TcpProxy
            self.proxy = TcpProxy(None)
            self.proxy.broker = self
            self.settings.setdefault("advertised.listeners",
                                     f"PLAINTEXT://127.0.0.1:{self.proxy.port}")
        self._lines: list[str] = []
        self._pump: threading.Thread | None = None
        self._ready = threading.Event()
        self._control_port = 0
        self._token = ""
        self._backend = None

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        if self.proxy is not None:
            return f"127.0.0.1:{self.proxy.port}"
        return f"{self.host}:{self.port}"

    bootstrap = bootstrap_servers

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def command(self) -> list[str]:
        entry = ["-m", "gregor.testing.child"] if self.with_faults else ["-m", "gregor", "broker"]
        cmd = [sys.executable, *entry, "--listen", f"127.0.0.1:{self.port}",
               "--data-dir", str(self.data_dir)]
        if self.broker_id is not None:
            cmd += ["--broker-id", str(self.broker_id)]
        if self.metrics_port is not None:
            cmd += ["--metrics-port", str(self.metrics_port)]
        for k, v in self.settings.items():
            cmd += ["--set", f"{k}={v}"]
        return cmd + self.extra_args

    def start(self, timeout: float = 30.0) -> "BrokerProcess":
        """Start the broker (a free port on the first start, the same port afterwards) and
        wait until it prints its ready line."""
        if self.running:
            raise RuntimeError("broker is already running; stop() or kill() it first")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        env["PYTHONUNBUFFERED"] = "1"
        if self.env:
            env.update(self.env)
        self._token = secrets.token_hex(16)
        if self.with_faults:
            from .control import TOKEN_ENV
            env[TOKEN_ENV] = self._token
        self._close_backend()
        self._ready.clear()
        self._lines = []
        self._control_port = 0
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
        if self.proxy is not None:
            self.proxy.target = (self.host, self.port)
        return self

    def _read_output(self, proc: subprocess.Popen, log) -> None:
        # Drain the pipe for the whole life of the process so the broker never blocks on a
        # full pipe, and keep everything in the log file.
        try:
            for line in proc.stdout:
                log.write(line)
                self._lines.append(line)
                if not self._ready.is_set():
                    m = CONTROL.search(line)
                    if m:
                        self._control_port = int(m.group(1))
                    m = LISTENER.search(line)
                    if m:
                        self.listeners[m.group(1)] = int(m.group(3))
                    m = READY.search(line)
                    if m:
                        self.host, self.port = m.group(1), int(m.group(2))
                        self._ready.set()
        finally:
            log.close()
            proc.stdout.close()

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait for a graceful exit; returns the exit code (kills after timeout)."""
        return self._signal(signal.SIGTERM, timeout)

    def interrupt(self, timeout: float = 30.0) -> int:
        """SIGINT (Ctrl-C) and wait; returns the exit code."""
        return self._signal(signal.SIGINT, timeout)

    def kill(self) -> int:
        """SIGKILL (kill -9): no shutdown work at all, as in a crash."""
        return self._signal(signal.SIGKILL, 10.0)

    def pause(self) -> None:
        """SIGSTOP: the process hangs (connections stay open, nothing is answered), as a
        broker stuck in a long GC pause or swapped out would."""
        if not self.running:
            raise RuntimeError("the broker is not running")
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT after pause()."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)

    def _signal(self, sig: int, timeout: float) -> int:
        if self.proc is None:
            return 0
        self._close_backend()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            if sig != signal.SIGKILL:
                self.proc.send_signal(signal.SIGCONT)     # a paused broker must see it
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

    def close(self) -> None:
        """Stop the broker; remove its data if it was a temporary directory; close the proxy."""
        if self.running:
            self.stop()
        if self.proxy is not None:
            self.proxy.close()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    # -- faults -----------------------------------------------------------------------------

    def _fault_backend(self):
        if not self.with_faults:
            raise RuntimeError("this BrokerProcess was started with faults=False")
        if not self.running or not self._control_port:
            raise RuntimeError("the broker is not running; start() it first")
        if self._backend is None:
            from .control import RemoteBackend
            self._backend = RemoteBackend(self._control_port, self._token)
        return self._backend

    def _close_backend(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None

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
        self.close()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"BrokerProcess({self.bootstrap}, {self.data_dir}, {state})"
