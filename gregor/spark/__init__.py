"""PySpark data source for gregor topics: `format("gregor")` for batch and streaming reads and
writes, with the options and schema of Spark's Kafka connector.

PySpark is imported only when `register`, `to_topic` or `gregor.spark.source` is used, so the
rest of gregor works without it."""
from __future__ import annotations


def register(spark) -> None:
    """Register `format("gregor")` on this SparkSession (needed only when the automatic
    registration through the installed `pyspark_gregor` module is not available)."""
    from .source import GregorDataSource
    spark.dataSource.register(GregorDataSource)


def to_topic(options=None, **more):
    """foreachBatch function writing a streaming query's output into a topic in any output
    mode (update and complete included); see gregor/spark/to_topic.py."""
    from .to_topic import to_topic as make
    return make(options, **more)


__all__ = ["register", "to_topic"]
