"""Run a standalone ZooKeeper from Debian's jar (what `gregor zookeeper` and the tests use).

Debian's zookeeper.jar lists its dependencies in its manifest's Class-Path, so the classpath is
the jar plus an slf4j binding (slf4j-simple, else slf4j-nop) to keep its log out of the void.
zkServer.sh is avoided on purpose: it reads /etc/zookeeper and wants a system install; a private
instance only needs a generated zoo.cfg in its own directory.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

JAVA_DIR = Path("/usr/share/java")
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"


def find_jar() -> Path | None:
    """$ZOOKEEPER_HOME's jar, else Debian's /usr/share/java/zookeeper.jar."""
    home = os.environ.get("ZOOKEEPER_HOME")
    if home:
        for pattern in ("zookeeper.jar", "zookeeper-*.jar", "lib/zookeeper-*.jar"):
            found = sorted(p for p in Path(home).glob(pattern) if "jute" not in p.name)
            if found:
                return found[-1]
    jar = JAVA_DIR / "zookeeper.jar"
    return jar if jar.exists() else None


def missing_reason() -> str | None:
    """Why ZooKeeper cannot be started here, or None."""
    if shutil.which("java") is None:
        return "java is not installed (apt-get install default-jre-headless)"
    if find_jar() is None:
        return ("ZooKeeper is not installed: apt-get install --no-install-recommends zookeeper "
                "(or set ZOOKEEPER_HOME)")
    return None


def classpath(jar: Path) -> str:
    parts = [str(jar)]
    home_lib = jar.parent / "lib"
    if home_lib.is_dir():                      # a tarball install keeps its deps in lib/
        parts.append(str(home_lib / "*"))
    for binding in ("slf4j-simple.jar", "slf4j-nop.jar"):
        if (JAVA_DIR / binding).exists():
            parts.append(str(JAVA_DIR / binding))
            break
    return os.pathsep.join(parts)


def write_config(directory: Path, port: int, *, tick_ms: int = 500,
                 address: str = "127.0.0.1") -> Path:
    """zoo.cfg for a private standalone server. tickTime 500 ms lets sessions be as short as
    1 s (2 ticks), so tests can expire a killed broker quickly."""
    directory.mkdir(parents=True, exist_ok=True)
    data = directory / "data"
    data.mkdir(exist_ok=True)
    cfg = directory / "zoo.cfg"
    cfg.write_text(
        f"tickTime={tick_ms}\nminSessionTimeout={2 * tick_ms}\nmaxSessionTimeout=60000\n"
        f"dataDir={data}\nclientPort={port}\nclientPortAddress={address}\n"
        "admin.enableServer=false\n4lw.commands.whitelist=ruok,srvr,mntr,stat\n"
        "maxClientCnxns=0\n")
    return cfg


def command(cfg: Path, jar: Path | None = None) -> list[str]:
    jar = jar or find_jar()
    if jar is None:
        raise RuntimeError(missing_reason() or "ZooKeeper not found")
    # A small heap and the C1 compiler only: it starts in ~0.6 s and stays under ~90 MB.
    return ["java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dzookeeper.admin.enableServer=false",
            "-cp", classpath(jar), MAIN_CLASS, str(cfg)]


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def srvr(host: str, port: int, timeout: float = 1.0) -> str | None:
    """The `srvr` four-letter word's answer, or None when nothing answers."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(b"srvr")
            chunks = []
            while True:
                b = s.recv(4096)
                if not b:
                    break
                chunks.append(b)
            return b"".join(chunks).decode(errors="replace")
    except OSError:
        return None


def wait_ready(host: str, port: int, proc: subprocess.Popen | None = None,
               timeout: float = 30.0) -> None:
    """Until `srvr` answers with a mode (standalone/leader/follower)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"ZooKeeper exited with code {proc.returncode}")
        answer = srvr(host, port)
        if answer and "Mode:" in answer:
            return
        time.sleep(0.05)
    raise RuntimeError(f"ZooKeeper on {host}:{port} was not ready after {timeout}s")


def start(directory: Path, port: int = 0, *, stdout=None) -> tuple[subprocess.Popen, int]:
    """Start a private server in `directory`; returns (process, port) once it serves."""
    port = port or free_port()
    cfg = write_config(Path(directory), port)
    proc = subprocess.Popen(command(cfg), stdout=stdout or subprocess.DEVNULL,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            cwd=str(directory))
    try:
        wait_ready("127.0.0.1", port, proc)
    except Exception:
        proc.kill()
        proc.wait()
        raise
    return proc, port
