"""`gregor cluster` starts a Schema Registry on the new cluster and prints its URL."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request

from gregor.broker.cluster import zookeeper_server as zk
from tests.support.zookeeper import unavailable

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))


def test_cluster_prints_the_registry_url(tmp_path):
    why = zk.missing_reason()
    if why:
        unavailable(why)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "gregor", "cluster", "--brokers", "1",
                             "--port", "0", "--data-dir", str(tmp_path / "c"),
                             "--set", "offsets.topic.num.partitions=1"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("gregor schema registry ready on ") or "warning" in line:
                break
        assert lines and lines[-1].startswith("gregor schema registry ready on http://"), \
            "".join(lines)
        assert any(x.startswith("gregor cluster ready on ") for x in lines)
        url = lines[-1].split(" on ")[1].strip()
        with urllib.request.urlopen(url + "/config", timeout=60) as resp:
            assert resp.read() == b'{"compatibilityLevel":"BACKWARD"}'
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=180)
