"""One local[2] SparkSession for every Spark test (starting one costs seconds), a gregor broker
shared by the session, and fresh topics per test."""
from __future__ import annotations

import itertools
import os
import shutil
import sys

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need pyspark (pip install 'gregor-kafka[spark]')")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("the Spark tests need a Java runtime (java on PATH or JAVA_HOME)", allow_module_level=True)

_counter = itertools.count()


@pytest.fixture(scope="session")
def spark():
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from gregor.spark import register
    session = (SparkSession.builder.master("local[2]").appName("gregor-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def bootstrap(shared_broker) -> str:
    return shared_broker.bootstrap


@pytest.fixture
def make_topic(bootstrap):
    """make_topic(partitions=1) -> a new, empty topic name unique to this test."""
    from gregor.client.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def make(partitions: int = 1, name: str | None = None) -> str:
        name = name or f"spark-{os.getpid()}-{next(_counter)}"
        admin.create_topics([NewTopic(name, partitions, 1)])
        return name

    make.admin = admin
    yield make
    admin.close()
