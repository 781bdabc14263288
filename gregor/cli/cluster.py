"""`gregor cluster`: ZooKeeper and N brokers on this machine in one command.

    gregor cluster --brokers 3 --data-dir ./cluster [--port 9092] [--secure]
                   [--set KEY=VALUE ...]

Starts a standalone ZooKeeper (DATA_DIR/zookeeper) and brokers 0..N-1 (DATA_DIR/broker-<id>,
ports PORT, PORT+1, ...; port 0 picks free ones) joined to it under the chroot /gregor, with
`default.replication.factor` min(3, N) unless --set says otherwise. `min.insync.replicas`
keeps Kafka's default (1): set it per topic (2 with RF 3 is the usual choice), since a
cluster-wide 2 would refuse acks=all, the default of most clients, on RF 1 topics. Prints one line per broker, then
`gregor cluster ready on HOST:PORT,HOST:PORT,...` (the bootstrap list) once every broker's
Metadata lists all N brokers and a controller, so a topic with replication factor N can be
created at once. Ctrl-C or SIGTERM
stops the brokers (each cleanly) and then ZooKeeper. Running it again on the same DATA_DIR
brings the same cluster back.

--secure: TLS and SASL/SCRAM-SHA-512 on every connection, between brokers too (user `broker`),
the ACL authorizer with `broker` and `admin` as super users, and ZooKeeper znodes created with
Kafka's secure ACLs under the brokers' digest login. A CA, the brokers' certificate and the
passwords are generated into DATA_DIR/security once (cluster_security.py), the SCRAM users are
written to ZooKeeper before the brokers start, and the client settings of the admin user are
printed after the ready line (also in DATA_DIR/security/admin.properties, for
--command-config). Brokers are advertised as `localhost` (the name their certificate holds).
"""
from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import click

READY = re.compile(r"gregor broker ready on (\S+):(\d+)")


def _broker(i: int, port: int, data_dir: Path, zk_connect: str, settings: dict,
            log_dir: Path, config_file: Path | None = None) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "gregor", "broker", "--broker-id", str(i),
           "--listen", f"127.0.0.1:{port}", "--data-dir", str(data_dir / f"broker-{i}"),
           "--set", f"zookeeper.connect={zk_connect}"]
    if config_file is not None:
        cmd += ["--config", str(config_file)]        # secrets stay out of `ps`
    for k, v in settings.items():
        cmd += ["--set", f"{k}={v}"]
    log = open(log_dir / f"broker-{i}.log", "ab")
    # a session of its own: Ctrl-C reaches only this command, which then stops the brokers
    # one after the other (each handing its leaderships to the others still running)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL,
                            start_new_session=True)


def _why_not_ready(proc: subprocess.Popen, port: int, log_path: Path) -> str:
    """What the broker's log says, shortest first: the port in use, else its last error."""
    try:
        proc.wait(5)                 # a broker that failed to bind exits at once
    except subprocess.TimeoutExpired:
        pass
    try:
        with open(log_path, "rb") as f:
            f.seek(max(0, f.seek(0, 2) - _LOG_TAIL_BYTES))
            tail = f.read().decode(errors="replace")
    except OSError:
        tail = ""
    if "address already in use" in tail.lower():
        return f"port {port} is in use (address already in use)"
    errors = [line.strip() for line in tail.splitlines() if "ERROR" in line or "Error" in line]
    return errors[-1] if errors else ("it exited with code "
                                      f"{proc.returncode}" if proc.returncode is not None
                                      else "no ready line yet")


# enough of a broker's log to find why it failed to start (its last lines)
_LOG_TAIL_BYTES = 16 * 1024


def _wait_ready(proc: subprocess.Popen, timeout: float, port: int = 0,
                log_path: Path | None = None) -> str:
    """The broker's HOST:PORT from its ready line; its later output is drained."""
    found: list[str] = []
    done = threading.Event()

    def pump():
        for raw in proc.stdout:
            line = raw.decode(errors="replace")
            m = READY.search(line)
            if m and not found:
                found.append(f"{m.group(1)}:{m.group(2)}")
                done.set()
        done.set()
    threading.Thread(target=pump, daemon=True).start()
    done.wait(timeout)
    if not found:
        if log_path is None:
            raise click.ClickException(f"broker (pid {proc.pid}) did not become ready")
        why = _why_not_ready(proc, port, log_path)
        raise click.ClickException(f"broker (pid {proc.pid}) did not become ready: {why}; "
                                   f"see its log {log_path}")
    return found[0]


def _sees(endpoint: str, brokers: int, client_settings: dict | None = None) -> bool:
    """Whether the broker at endpoint answers Metadata with `brokers` brokers and a controller
    (a fresh admin client asks its only bootstrap broker)."""
    from ..client.admin import AdminClient
    from ..client.errors import ClientError
    from ..protocol.errors import KafkaError
    try:
        with AdminClient({**(client_settings or {}), "bootstrap.servers": endpoint}) as admin:
            cluster = admin.describe_cluster(timeout=5)
    except (ClientError, KafkaError, OSError):
        return False
    return len(cluster.brokers) == brokers and cluster.controller_id >= 0


def _wait_formed(endpoints: list[str], timeout: float, client_settings: dict | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not all(_sees(e, len(endpoints), client_settings) for e in endpoints):
        if time.monotonic() > deadline:
            print(f"warning: not every broker sees all {len(endpoints)} brokers after "
                  f"{timeout:.0f}s", flush=True)
            return
        time.sleep(0.1)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--brokers", type=click.IntRange(1, 32), default=3, show_default=True,
              help="Number of brokers.")
@click.option("--data-dir", type=click.Path(file_okay=False), required=True,
              help="Directory for ZooKeeper's and every broker's data and logs.")
@click.option("--port", type=int, default=9092, show_default=True,
              help="Port of broker 0; broker i listens on PORT+i (0: free ports).")
@click.option("--zookeeper-port", type=int, default=0, show_default=True,
              help="ZooKeeper's client port (0 picks a free one).")
@click.option("--secure", is_flag=True, default=False,
              help="TLS, SCRAM between brokers and for clients, ACLs, ZooKeeper ACLs; prints "
                   "the admin client's settings.")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
              help="A broker setting for every broker (repeatable).")
@click.option("--schema-registry-port", type=int, default=None,
              help="Port of the Schema Registry started beside the brokers (default 8081, or a "
                   "free one with --port 0).")
@click.option("--no-schema-registry", is_flag=True, default=False,
              help="Do not start a Schema Registry.")
def command(brokers, data_dir, port, zookeeper_port, secure, settings, schema_registry_port,
            no_schema_registry):
    """Run ZooKeeper and a cluster of gregor brokers on this machine."""
    from ..broker.cluster import zookeeper_server as zk

    why = zk.missing_reason()
    if why:
        raise click.ClickException(why)
    root = Path(data_dir)
    root.mkdir(parents=True, exist_ok=True)
    extra = {"default.replication.factor": min(3, brokers)}
    for s in settings:
        k, sep, v = s.partition("=")
        if not sep:
            raise click.BadParameter(f"{s!r} is not KEY=VALUE", param_hint="--set")
        extra[k.strip()] = v.strip()
    procs: list[subprocess.Popen] = []
    stopping = threading.Event()

    def stop(*_):
        stopping.set()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    files = config_file = client_settings = None
    if secure:
        from .cluster_security import SecureClusterFiles
        files = SecureClusterFiles.create_or_load(root)
        config_file = files.broker_properties

    try:
        zk_proc, zk_port = zk.start(root / "zookeeper", zookeeper_port,
                                    stdout=open(root / "zookeeper.log", "ab"))
    except RuntimeError as e:         # not ready in time, or it exited: say where to look
        raise click.ClickException(f"{e}; see its log {(root / 'zookeeper.log').resolve()}")
    connect = f"127.0.0.1:{zk_port}/gregor"
    print(f"zookeeper ready on 127.0.0.1:{zk_port} (pid {zk_proc.pid})", flush=True)
    try:
        if files is not None:
            from .cluster_security import create_users
            create_users(files, connect)
            client_settings = files.confluent_settings("")
        endpoints = []
        for i in range(brokers):
            procs.append(_broker(i, port + i if port else 0, root, connect, extra, root,
                                 config_file))
        for i, p in enumerate(procs):
            endpoint = _wait_ready(p, 120, port + i if port else 0,
                                   (root / f"broker-{i}.log").resolve())
            if files is not None:
                endpoint = "localhost:" + endpoint.rsplit(":", 1)[1]   # the certificate's name
            endpoints.append(endpoint)
            print(f"broker {i} ready on {endpoint} (pid {p.pid}, log {root}/broker-{i}.log)",
                  flush=True)
        _wait_formed(endpoints, 60, client_settings)
        print(f"gregor cluster ready on {','.join(endpoints)}", flush=True)
        registry = None
        if not no_schema_registry:
            registry = _start_registry(endpoints, client_settings, schema_registry_port,
                                       port)
        if files is not None:
            from .cluster_security import describe
            print(describe(files, ",".join(endpoints)), flush=True)
        while not stopping.is_set():
            if any(p.poll() is not None for p in procs) and all(p.poll() is not None
                                                                for p in procs):
                break                    # every broker is gone: nothing left to run
            time.sleep(0.2)
    finally:
        if not no_schema_registry and locals().get("registry") is not None:
            registry.stop()
        for p in procs:
            if p.poll() is None:
                p.terminate()
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
        zk_proc.terminate()
        try:
            zk_proc.wait(30)
        except subprocess.TimeoutExpired:
            zk_proc.kill()


def _start_registry(endpoints, client_settings, registry_port, broker_port):
    """The Schema Registry as a client of the new cluster, in this process (its state is in
    the cluster's _schemas topic); prints its ready line."""
    from ..registry.server import RegistryThread
    if registry_port is None:
        registry_port = 8081 if broker_port else 0
    cfg = {"bootstrap.servers": ",".join(endpoints), **(client_settings or {})}
    try:
        registry = RegistryThread(cfg, port=registry_port).start()
    except Exception as e:
        print(f"warning: the schema registry did not start: {e}", flush=True)
        return None
    print(f"gregor schema registry ready on {registry.url}", flush=True)
    return registry
