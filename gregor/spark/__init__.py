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


def from_confluent(col, url, subject, format="avro", **kwargs):
    """Confluent-framed binary values as structs typed by the subject's latest schema
    (gregor/spark/functions.py)."""
    from .functions import from_confluent as make
    return make(col, url, subject, format, **kwargs)


def to_confluent(col, url, subject, schema_str=None, **kwargs):
    """A typed column as Confluent-framed Avro, its schema registered under the subject
    (gregor/spark/functions.py)."""
    from .functions import to_confluent as make
    return make(col, url, subject, schema_str, **kwargs)


__all__ = ["register", "session", "to_topic", "from_confluent", "to_confluent"]
