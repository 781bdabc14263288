"""PySpark data source for gregor topics: `format("gregor")` for batch and streaming reads and
writes, with the options and schema of Spark's Kafka connector.

PySpark is imported only when `register`, `to_topic` or `gregor.spark.source` is used, so the
rest of gregor works without it."""
from __future__ import annotations


def register(spark) -> None:
    """Register `format("gregor")` on this SparkSession (needed only when the automatic
    registration through the installed `pyspark_gregor` module is not available), and warn in
    one line when the session's Python workers cannot import gregor (python_workers.py)."""
    from .python_workers import check_workers
    from .source import GregorDataSource
    spark.dataSource.register(GregorDataSource)
    check_workers(spark)


def session(builder=None, *, master=None, app_name=None, conf=None):
    """A SparkSession whose Python workers run the interpreter gregor runs in (unless
    spark.pyspark.python or PYSPARK_PYTHON is set), where `format("gregor")` is found."""
    from .python_workers import session as make
    return make(builder, master=master, app_name=app_name, conf=conf)


def to_topic(options=None, **more):
    """foreachBatch function writing a streaming query's output into a topic in any output
    mode (update and complete included); see gregor/spark/to_topic.py."""
    from .to_topic import to_topic as make
    return make(options, **more)


__all__ = ["register", "session", "to_topic"]
