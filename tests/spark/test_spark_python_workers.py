"""Which Python Spark's workers run (gregor/spark/python_workers.py): the user's choice first,
then gregor's own interpreter; a one-line warning when the workers' Python lacks gregor.
The end-to-end case (a session from a wheel install, its python not on PATH) is
tests/test_wheel_install.py; these run without starting a JVM."""
from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import pytest

from gregor.spark import python_workers


def test_the_users_choice_comes_first(monkeypatch):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    assert python_workers.chosen_python({}) == sys.executable
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/py/bin/python")
    assert python_workers.chosen_python({}) == "/opt/py/bin/python"
    assert python_workers.chosen_python({"spark.pyspark.python": "/x/python"}) == "/x/python"


def _no_gregor_python(tmp_path: Path) -> str:
    """An interpreter without gregor: the base interpreter, isolated from .venv (-I ignores
    PYTHONPATH and the current directory)."""
    base = getattr(sys, "_base_executable", sys.executable)
    wrapper = tmp_path / "python-without-gregor"
    wrapper.write_text(f"#!/bin/sh\nexec {base} -I -S \"$@\"\n")
    wrapper.chmod(0o755)
    return str(wrapper)


def test_import_problem_names_the_interpreter(tmp_path):
    assert python_workers.import_problem(sys.executable) is None
    bare = _no_gregor_python(tmp_path)
    problem = python_workers.import_problem(bare)
    assert problem is not None and bare in problem and "cannot import gregor" in problem


class _FakeSession:
    """What check_workers asks of a session: its master and the JVM's worker Python."""

    def __init__(self, master: str, python: str):
        exec_ = type("PythonUtils", (), {"defaultPythonExec": staticmethod(lambda: python)})
        jvm = type("J", (), {})()
        jvm.org = type("O", (), {})()
        jvm.org.apache = type("A", (), {})()
        jvm.org.apache.spark = type("S", (), {})()
        jvm.org.apache.spark.api = type("Api", (), {})()
        jvm.org.apache.spark.api.python = type("P", (), {"PythonUtils": exec_})()
        self.sparkContext = type("SC", (), {"master": master, "_jvm": jvm})()


def test_check_workers_warns_in_one_line_when_the_workers_lack_gregor(tmp_path):
    bare = _no_gregor_python(tmp_path)
    with pytest.warns(RuntimeWarning) as caught:
        message = python_workers.check_workers(_FakeSession("local[2]", bare))
    assert message is not None and "\n" not in message
    assert bare in message and "PYSPARK_PYTHON" in message and "gregor.spark.session()" in message
    assert str(caught[0].message) == message


def test_check_workers_is_quiet_when_the_workers_have_gregor():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert python_workers.check_workers(_FakeSession("local[2]", sys.executable)) is None
        # off this machine the workers' Python cannot be probed from here
        assert python_workers.check_workers(_FakeSession("spark://h:7077", "/nope")) is None


def test_the_workers_python_of_a_running_session(spark):
    """Asked of the JVM itself (tests/spark/conftest.py started it with PYSPARK_PYTHON set to
    this interpreter); PySpark 4.3's py4j sees no static defaultPythonExec, so the same rule
    is read from the JVM's environment."""
    assert python_workers.workers_python(spark) == sys.executable
    assert python_workers.check_workers(spark) is None


def test_session_sets_the_workers_python_before_the_jvm_starts(monkeypatch):
    """session() hands the builder spark.pyspark.python and exports PYSPARK_PYTHON (what the
    JVM reads) when the user chose neither; a stub builder stands in for the JVM."""
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    seen = {}

    class Builder:
        _options: dict = {}

        def config(self, key, value):
            seen[key] = value
            return self

        def getOrCreate(self):
            seen["env"] = os.environ.get("PYSPARK_PYTHON")
            return _FakeSession("local[1]", sys.executable)

    python_workers.session(Builder())
    assert seen["spark.pyspark.python"] == sys.executable and seen["env"] == sys.executable
