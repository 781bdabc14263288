"""gregor as a user installs it: the sdist and the wheel built, the wheel installed (not
editable) into a fresh venv outside the checkout, and everything a user meets run from there:
the broker, the CLI, the console (pages and static files, read from the installed package),
the pytest plugin, and a Spark write and read through format("gregor") with that venv's python
not on PATH.

To stay fast the fresh venv borrows .venv's installed dependencies through a .pth line (a
directory added by a .pth line is not a site directory, so .venv's own .pth files, among them
the editable install's path to the checkout, are not read) and the wheel goes in with
--no-deps. Every command runs from an empty directory, with PYTHONPATH unset."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import threading
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CHECKOUT = Path(__file__).resolve().parents[1]
# generous liveness bounds: building, a JVM's start, a loaded 2-core machine
STEP_TIMEOUT_S = 300


def _env(venv: Path) -> dict:
    """The user's shell: neither the fresh venv nor .venv on PATH (so `python3` there is one
    without gregor), no PYTHONPATH, no PYSPARK_PYTHON from an earlier test."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON",
                        "PYTHONSTARTUP")}
    skip = {str(venv / "bin"), str(Path(sys.executable).parent), str(Path(sys.prefix) / "bin")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and p not in skip)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    return env


def _run(cmd, cwd, env, **kw):
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=STEP_TIMEOUT_S, **kw)
    assert done.returncode == 0, f"{cmd} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


class _Served:
    """A long-running command of the venv, its ready line awaited."""

    def __init__(self, cmd, cwd, env, ready: str):
        self.proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     text=True)
        self.lines: list[str] = []
        self.match = None
        found = threading.Event()

        def pump():
            for line in self.proc.stdout:
                self.lines.append(line)
                m = re.search(ready, line)
                if m and self.match is None:
                    self.match = m
                    found.set()
            found.set()
        threading.Thread(target=pump, daemon=True).start()
        found.wait(STEP_TIMEOUT_S)
        assert self.match, f"{cmd} never said {ready!r}:\n{''.join(self.lines)}"

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv, empty working directory, env) with gregor installed from its wheel."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME") \
            and os.environ.get("CI") != "true":
        pytest.skip("needs a Java runtime for the Spark step (java on PATH or JAVA_HOME)")
    root = tmp_path_factory.mktemp("wheel")
    dist, venv, cwd = root / "dist", root / "venv", root / "work"
    cwd.mkdir()
    env = _env(venv)
    # sdist first, then the wheel from the unpacked sdist (build's default): what is missing
    # from the sdist is missing from the wheel too. Without Cython in .venv the wheel is pure
    # Python (the compiled modules are optional: gregor/compiled.py).
    _run([sys.executable, "-m", "build", "--no-isolation", "--skip-dependency-check",
          "--outdir", str(dist), str(CHECKOUT)], cwd, env)
    wheels = list(dist.glob("gregor_kafka-*.whl"))
    sdists = list(dist.glob("gregor_kafka-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in dist.iterdir())
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd, env)
    python = venv / "bin" / "python"
    site = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                cwd, env).strip()
    Path(site, "_borrowed_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
          "--no-index", str(wheels[0])], cwd, env)
    return venv, cwd, env


def test_the_wheel_holds_the_console_files(installed):
    venv, cwd, env = installed
    out = _run([str(venv / "bin" / "python"), "-c", textwrap.dedent("""
        import importlib.metadata as md, gregor, pyspark_gregor
        from importlib.resources import files
        print(gregor.__file__)
        print(pyspark_gregor.__file__)
        console = files("gregor.console")
        print(sorted(p.name for p in console.joinpath("templates").iterdir()))
        print(sorted(p.name for p in console.joinpath("static").iterdir()))
        print(md.distribution("gregor-kafka").entry_points.select(group="pytest11"))
    """)], cwd, env).splitlines()
    assert out[0].startswith(str(venv)) and out[1].startswith(str(venv)), out
    assert "base.html" in out[2] and "topics.html" in out[2], out[2]
    assert "console.js" in out[3] and "console.css" in out[3], out[3]
    assert "gregor.testing.plugin" in out[4], out[4]


def test_broker_cli_and_console_from_the_wheel(installed, tmp_path):
    venv, cwd, env = installed
    gregor = str(venv / "bin" / "gregor")
    broker = _Served([gregor, "broker", "--listen", "127.0.0.1:0", "--data-dir",
                      str(tmp_path / "data")], cwd, env, r"gregor broker ready on (\S+)")
    console = None
    try:
        bootstrap = broker.match.group(1)
        _run([gregor, "topics", "create", "events", "--partitions", "2",
              "--bootstrap-server", bootstrap], cwd, env)
        _run([gregor, "produce", "events", "--bootstrap-server", bootstrap], cwd, env,
             input="".join(f"{i}\n" for i in range(1, 11)))
        out = _run([gregor, "consume", "events", "--from-beginning", "--max-messages", "10",
                    "--bootstrap-server", bootstrap], cwd, env)
        assert sorted(int(v) for v in out.split()) == list(range(1, 11)), out
        console = _Served([gregor, "console", "--bootstrap-server", bootstrap, "--listen",
                           "127.0.0.1:0"], cwd, env, r"gregor console ready on (\S+)")
        base = console.match.group(1)
        for page, expect in (("/", "partitions"), ("/topics", "events"),
                             ("/topics/events", "events"),
                             ("/static/console.js", "function"), ("/static/console.css", "{")):
            with urllib.request.urlopen(base + page, timeout=STEP_TIMEOUT_S) as resp:
                body = resp.read().decode()
                assert resp.status == 200 and expect in body, (page, body[:500])
    finally:
        if console is not None:
            console.stop()
        broker.stop()


def test_pytest_plugin_from_the_wheel(installed):
    venv, cwd, env = installed
    test_file = cwd / "test_uses_plugin.py"
    test_file.write_text(textwrap.dedent(f"""
        import gregor
        from gregor.client.consumer import Consumer
        from gregor.client.producer import Producer

        def test_round_trip(gregor_broker):
            assert gregor.__file__.startswith({str(venv)!r}), gregor.__file__
            gregor_broker.create_topic("t", partitions=1)
            p = Producer({{"bootstrap.servers": gregor_broker.bootstrap}})
            p.send("t", b"hello").get(30)
            p.close()
            c = Consumer({{"bootstrap.servers": gregor_broker.bootstrap,
                           "auto.offset.reset": "earliest"}})
            c.assign([("t", 0)])
            got = []
            for _ in range(100):
                got += [r.value for r in c.poll(0.5)]
                if got:
                    break
            c.close()
            assert got == [b"hello"]
    """))
    out = _run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                str(test_file)], cwd, env)
    assert "1 passed" in out, out


def test_spark_format_gregor_from_the_wheel_without_the_venv_on_path(installed, tmp_path):
    venv, cwd, env = installed
    broker = _Served([str(venv / "bin" / "gregor"), "broker", "--listen", "127.0.0.1:0",
                      "--data-dir", str(tmp_path / "data")], cwd, env,
                     r"gregor broker ready on (\S+)")
    job = cwd / "job.py"
    job.write_text(textwrap.dedent(f"""
        import gregor.spark
        spark = gregor.spark.session(master="local[1]", app_name="wheel-test", conf={{
            "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"}})
        spark.sparkContext.setLogLevel("ERROR")
        opts = {{"kafka.bootstrap.servers": {broker.match.group(1)!r}}}
        (spark.range(100).selectExpr("CAST(id AS STRING) AS value")
              .write.format("gregor").mode("append").options(topic="rows", **opts).save())
        n = spark.read.format("gregor").options(subscribe="rows", **opts).load().count()
        print("rows read", n)
        spark.stop()
    """))
    try:
        # the python that PATH names has no gregor: the workers must not run it
        plain = subprocess.run(["python3", "-c", "import gregor"], cwd=cwd, env=env,
                               capture_output=True)
        assert plain.returncode != 0, "python3 on PATH imports gregor: the test proves nothing"
        out = _run([str(venv / "bin" / "python"), str(job)], cwd, env)
        assert "rows read 100" in out, out
    finally:
        broker.stop()
