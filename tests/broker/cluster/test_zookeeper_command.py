"""`gregor zookeeper`: a private standalone ZooKeeper with a generated config."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

from kazoo.client import KazooClient

from gregor.broker.cluster import zookeeper_server as zk
from tests.support.zookeeper import unavailable

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))


def test_runs_standalone_prints_ready_and_stops_on_sigterm(tmp_path):
    why = zk.missing_reason()
    if why:
        unavailable(why)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "gregor", "zookeeper", "--data-dir",
                             str(tmp_path / "zk"), "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)
    try:
        line = ""
        for line in proc.stdout:
            if "ready on" in line:
                break
        m = re.search(r"gregor zookeeper ready on (\S+):(\d+)", line)
        assert m, line
        client = KazooClient(f"{m.group(1)}:{m.group(2)}")
        client.start(10)
        client.create("/hello", b"x")
        assert client.get("/hello")[0] == b"x"
        client.stop()
        cfg = (tmp_path / "zk" / "zoo.cfg").read_text()
        assert f"clientPort={m.group(2)}" in cfg and "admin.enableServer=false" in cfg
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(30)
    assert code == 0
