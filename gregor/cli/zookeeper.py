"""`gregor zookeeper`: a standalone ZooKeeper for a local cluster, like Kafka's
zookeeper-server-start.sh.

    gregor zookeeper --data-dir ./zk [--port 2181] [--host 127.0.0.1]

Runs Debian's ZooKeeper jar (or $ZOOKEEPER_HOME's) with a zoo.cfg generated in DATA_DIR and
prints `gregor zookeeper ready on HOST:PORT` once it answers. SIGTERM or Ctrl-C stops it.
"""
from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import click


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--data-dir", type=click.Path(file_okay=False), required=True,
              help="Directory for zoo.cfg and ZooKeeper's snapshots and transaction log.")
@click.option("--port", type=int, default=2181, show_default=True,
              help="Client port (0 picks a free one).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on.")
@click.option("--tick-ms", type=int, default=2000, show_default=True,
              help="ZooKeeper's tickTime; sessions may be 2 to 20 ticks long.")
def command(data_dir, port, host, tick_ms):
    """Run a standalone ZooKeeper for a gregor cluster."""
    from ..broker.cluster import zookeeper_server as zk

    why = zk.missing_reason()
    if why:
        raise click.ClickException(why)
    port = port or zk.free_port(host)
    cfg = zk.write_config(Path(data_dir), port, tick_ms=tick_ms, address=host)
    proc = subprocess.Popen(zk.command(cfg), stdin=subprocess.DEVNULL, cwd=data_dir)

    def stop(*_):
        proc.terminate()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        zk.wait_ready(host, port, proc, timeout=60)
    except RuntimeError as e:
        proc.kill()
        raise click.ClickException(str(e)) from None
    print(f"gregor zookeeper ready on {host}:{port}", flush=True)
    code = proc.wait()
    # 143 = terminated by our SIGTERM: a clean stop.
    sys.exit(0 if code in (0, 143, -signal.SIGTERM) else code)
