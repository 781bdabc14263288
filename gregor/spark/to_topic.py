"""`to_topic`: write a streaming query's output into a topic in any output mode.

Spark's Kafka sink accepts `outputMode("update")` (its write builder implements
SupportsStreamingUpdateAsAppend), the usual way to stream an aggregation into Kafka. PySpark's
Python data source API cannot say that (its write builder is only SupportsTruncate), so
`writeStream.format("gregor").outputMode("update")` is refused by Spark before gregor is asked.
`to_topic` gives the same result through `foreachBatch`:

    q = (counts.writeStream.outputMode("update")
         .foreachBatch(gregor.spark.to_topic({"kafka.bootstrap.servers": "...", "topic": "counts"}))
         .option("checkpointLocation", "/ck").start())

Each micro-batch's rows (the updated rows in update mode, all rows in complete mode, the new
ones in append mode) are written by the gregor sink with the given options, so every sink
option applies, `deliveryGuarantee=exactly-once` included: Spark runs the batch's write job
on the query's thread, whose jobs carry the query id and batch id as local properties, and
the exactly-once sink keys its transactions and its replay check on exactly those, as it does
for `writeStream.format("gregor")`. A micro-batch Spark replays after a crash is then written
once. Without exactly-once the delivery is at-least-once, as with Spark's Kafka sink.
"""
from __future__ import annotations

from typing import Mapping

from .exactly_once import BATCH_ID_PROPERTY, QUERY_ID_PROPERTY
from .options import OptionError, _get


class TopicWriter:
    """A foreachBatch function: `(batch_df, batch_id)` -> the rows written into the topic."""

    def __init__(self, options: Mapping[str, str]):
        self.options = {str(k): str(v) for k, v in options.items()}
        guarantee = (_get(self.options, "deliveryGuarantee") or "").strip().lower()
        self.exactly_once = guarantee == "exactly-once"

    def __call__(self, batch_df, batch_id: int) -> None:
        spark = batch_df.sparkSession
        if self.exactly_once:
            sc = spark.sparkContext
            if (sc.getLocalProperty(BATCH_ID_PROPERTY) != str(batch_id)
                    or not sc.getLocalProperty(QUERY_ID_PROPERTY)):
                raise OptionError("to_topic with deliveryGuarantee=exactly-once must run as a "
                                  "streaming query's foreachBatch function: it relies on the "
                                  "query id and batch id Spark gives that query's jobs")
        _ensure_registered(spark)
        batch_df.write.format("gregor").options(**self.options).mode("append").save()


def to_topic(options: Mapping[str, str] | None = None, **more: str) -> TopicWriter:
    """The foreachBatch function writing each micro-batch with the gregor sink; options as for
    `format("gregor")` (a dict, keyword arguments, or both)."""
    return TopicWriter({**(options or {}), **more})


def _ensure_registered(spark) -> None:
    if not getattr(spark, "_gregor_registered", False):
        from .source import GregorDataSource
        spark.dataSource.register(GregorDataSource)
        spark._gregor_registered = True
