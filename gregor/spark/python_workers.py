"""Which Python Spark's workers run, and making it one that can import gregor.

PySpark's Python workers (the ones that run a Python data source's reader and writer, and the
lookup that finds `format("gregor")`) start the interpreter named by the JVM's environment when
it started: PYSPARK_DRIVER_PYTHON, else PYSPARK_PYTHON, else `python3` from PATH
(org.apache.spark.api.python.PythonUtils.defaultPythonExec, read once per JVM). A job run as
`.venv/bin/python job.py` without the venv activated therefore gets the system's `python3`,
which has no gregor, and Spark says only `DATA_SOURCE_NOT_FOUND`. Once the JVM runs nothing
changes that choice, so `session()` sets it before the JVM starts and `register()` checks it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings

CONF_KEY = "spark.pyspark.python"
# The probe only looks for the modules (no import of pyspark or pyarrow: milliseconds).
_PROBE = ("import importlib.util as u, sys; "
          "sys.exit(0 if u.find_spec('gregor') and u.find_spec('pyspark_gregor') else 3)")
_PROBE_TIMEOUT_S = 30.0  # an interpreter's start on a loaded machine, with margin


def chosen_python(builder_options: dict | None = None) -> str:
    """The interpreter the workers should run: the user's choice when there is one
    (spark.pyspark.python, PYSPARK_PYTHON), else the one gregor runs in."""
    options = builder_options or {}
    return (options.get(CONF_KEY) or os.environ.get("PYSPARK_PYTHON") or sys.executable)


def session(builder=None, *, master: str | None = None, app_name: str | None = None,
            conf: dict | None = None):
    """`builder.getOrCreate()` with the Python workers on the interpreter gregor runs in
    (unless spark.pyspark.python or PYSPARK_PYTHON says otherwise), so that the installed
    `pyspark_gregor` hook registers `format("gregor")`; a one-line warning when those workers
    still cannot import gregor. `builder` defaults to `SparkSession.builder`; `conf` adds
    settings."""
    from pyspark.sql import SparkSession
    builder = builder if builder is not None else SparkSession.builder
    if master:
        builder = builder.master(master)
    if app_name:
        builder = builder.appName(app_name)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    python = chosen_python(getattr(builder, "_options", None))
    builder = builder.config(CONF_KEY, python)
    # The JVM reads the environment variable, not the setting; its child inherits ours.
    os.environ.setdefault("PYSPARK_PYTHON", python)
    spark = builder.getOrCreate()
    check_workers(spark)
    return spark


def workers_python(spark) -> str | None:
    """The interpreter this session's JVM starts Python workers with, or None when it cannot
    be asked (Spark Connect)."""
    try:
        jvm = spark.sparkContext._jvm
    except Exception:  # noqa: BLE001 - Spark Connect has no sparkContext; nothing to check
        return None
    try:
        return str(jvm.org.apache.spark.api.python.PythonUtils.defaultPythonExec())
    except Exception:  # noqa: BLE001 - no static forwarder for it (PySpark 4.3): same rule
        env = jvm.java.lang.System.getenv
        return str(env("PYSPARK_DRIVER_PYTHON") or env("PYSPARK_PYTHON") or "python3")


def import_problem(python: str) -> str | None:
    """None when `python` finds gregor (and the `pyspark_gregor` hook), else why not."""
    path = shutil.which(python) or python
    try:
        probe = subprocess.run([path, "-c", _PROBE], stdin=subprocess.DEVNULL,
                               capture_output=True, timeout=_PROBE_TIMEOUT_S, cwd="/")
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"could not run {python!r} ({e})"
    if probe.returncode == 0:
        return None
    return f"{python!r} ({path}), which cannot import gregor"


def check_workers(spark) -> str | None:
    """Warn in one line (and return it) when this session's Python workers cannot import
    gregor; local mode only, where the workers run on this machine."""
    master = spark.sparkContext.master if hasattr(spark, "sparkContext") else ""
    if not str(master).startswith("local"):
        return None
    python = workers_python(spark)
    if python is None:
        return None
    problem = import_problem(python)
    if problem is None:
        return None
    message = (f"Spark's Python workers run {problem}, so format(\"gregor\") will not be "
               f"found: start the session with gregor.spark.session(), or set "
               f"PYSPARK_PYTHON={sys.executable} before it starts (docs/spark.md, Installing)")
    warnings.warn(message, RuntimeWarning, stacklevel=3)
    return message
