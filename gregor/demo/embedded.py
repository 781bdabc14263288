"""A gregor broker as a child process for the demo (`python -m gregor broker`), on 127.0.0.1 with a
port the OS picks, stopped when the demo ends; or a whole local cluster (`python -m gregor
cluster`: ZooKeeper and N replicating brokers) for `gregor demo --brokers N`. With
schema_registry=True the Schema Registry runs too (in the broker's process, or beside the
cluster's brokers) and its URL, from its ready line, is `schema_registry_url`."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

_READY = re.compile(r"gregor broker ready on (\S+):(\d+)")
_REGISTRY_READY = re.compile(r"gregor schema registry ready on (\S+)")
# Start-up is a second or two; a loaded CI machine gets far more slack than that.
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 60.0     # a cluster's brokers each hand their leaderships over first


class EmbeddedBroker:
    ready = _READY

    def __init__(self, data_dir: Path, settings: dict | None = None, *, schema_registry: bool = False):
        self.data_dir = Path(data_dir)
        self.settings = dict(settings or {})
        self.schema_registry = schema_registry
        if schema_registry:
            self.settings.setdefault("schema.registry.listeners", "http://127.0.0.1:0")
        self.log_path = self.data_dir.parent / "broker.log"
        self.bootstrap: str | None = None
        self.schema_registry_url: str | None = None
        self._proc: subprocess.Popen | None = None
        self._log = None
        self._pump: threading.Thread | None = None

    def command(self) -> list[str]:
        return [sys.executable, "-m", "gregor", "broker", "--listen", "127.0.0.1:0",
                "--data-dir", str(self.data_dir), "--log-level", "WARNING"]

    def start(self) -> str:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        cmd = self.command()
        for k, v in self.settings.items():
            cmd += ["--set", f"{k}={v}"]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        log = self._log = open(self.log_path, "w")
        self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
        found: dict[str, str] = {}
        ready = threading.Event()

        def pump():  # keep reading stdout so the broker never blocks on a full pipe
            for line in self._proc.stdout:
                log.write(line)
                log.flush()
                m = self.ready.search(line)
                if m and "bootstrap" not in found:
                    found["bootstrap"] = ":".join(m.groups())
                m = _REGISTRY_READY.search(line)
                if m and "registry" not in found:
                    found["registry"] = m.group(1)
                if "schema registry did not start" in line:   # `gregor cluster` runs on without it
                    ready.set()
                if "bootstrap" in found and ("registry" in found or not self.schema_registry):
                    ready.set()
            ready.set()

        self._pump = threading.Thread(target=pump, name="gregor-demo-broker-output", daemon=True)
        self._pump.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready.wait(0.1):
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the gregor broker did not start within {START_TIMEOUT_S:.0f}s; "
                                   f"see {self.log_path}")
        if "bootstrap" not in found or (self.schema_registry and "registry" not in found):
            what = "broker" if "bootstrap" not in found else "schema registry"
            code = self._proc.poll()
            self.stop()
            raise RuntimeError(f"the gregor {what} did not start" + (
                "" if code is None else f" (the process exited with status {code})")
                + f"; see {self.log_path}")
        self.bootstrap = found["bootstrap"]
        self.schema_registry_url = found.get("registry")
        return self.bootstrap

    def stop(self) -> None:
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._pump is not None:
            self._pump.join(STOP_TIMEOUT_S)  # ends at the broker's end of output
        self._proc.stdout.close()
        self._log.close()
        self._proc = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()


class EmbeddedCluster(EmbeddedBroker):
    """ZooKeeper and `brokers` gregor brokers (`gregor cluster`), bootstrap = all of them."""
    ready = re.compile(r"gregor cluster ready on (\S+)")

    def __init__(self, data_dir: Path, brokers: int, settings: dict | None = None, *,
                 schema_registry: bool = False):
        super().__init__(data_dir, settings)
        self.schema_registry = schema_registry   # `gregor cluster` starts one unless told not to
        self.brokers = brokers
        self.log_path = self.data_dir.parent / "cluster.log"

    def command(self) -> list[str]:
        # the brokers' own logs go to data_dir/broker-<id>.log
        return [sys.executable, "-m", "gregor", "cluster", "--brokers", str(self.brokers),
                "--port", "0", "--data-dir", str(self.data_dir)] + (
                    [] if self.schema_registry else ["--no-schema-registry"])
