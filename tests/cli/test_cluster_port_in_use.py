"""`gregor cluster` on a port someone else listens on: the failure names the port and the
broker's log, not only "did not become ready"."""
from __future__ import annotations

import os
import socket
import subprocess
import sys

from gregor.broker.cluster import zookeeper_server as zk
from tests.support.zookeeper import unavailable

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
EXIT_TIMEOUT_S = 180      # ZooKeeper's start and a broker's, on a loaded machine


def test_the_failure_names_the_port_in_use_and_the_log(tmp_path):
    why = zk.missing_reason()
    if why:
        unavailable(why)
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        done = subprocess.run([sys.executable, "-m", "gregor", "cluster", "--brokers", "1",
                               "--port", str(port), "--data-dir", str(tmp_path / "c")],
                              capture_output=True, text=True, env=env, timeout=EXIT_TIMEOUT_S)
    finally:
        taken.close()
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert f"port {port} is in use (address already in use)" in out, out
    assert str((tmp_path / "c" / "broker-0.log").resolve()) in out, out
