"""PySpark data source for gregor topics: `format("gregor")` for batch and streaming reads and
writes, with the options and schema of Spark's Kafka connector.

PySpark is imported only when `register` or `gregor.spark.source` is used, so the rest of
gregor works without it."""
from __future__ import annotations


def register(spark) -> None:
    """Register `format("gregor")` on this SparkSession (needed only when the automatic
    registration through the installed `pyspark_gregor` module is not available)."""
    from .source import GregorDataSource
    spark.dataSource.register(GregorDataSource)


__all__ = ["register"]
