"""`format("gregor")`: the PySpark data source for gregor topics (and any Kafka cluster).

Read: `spark.read` / `spark.readStream` with the options and schema of Spark's Kafka connector
(see gregor/spark/options.py). Write: `df.write` / `df.writeStream` with a `value` column
(string or binary) and optional `key`, `headers`, `topic`, `partition` columns, or the `topic`
option.

Delivery guarantee of the sink: at-least-once by default. Each Spark task writes through its
own idempotent producer and flushes before it reports success, so a record is never lost and a
producer retry never duplicates it; but a task that Spark re-runs (failure, speculation) or a
micro-batch replayed after a crash writes its records again. With
deliveryGuarantee=exactly-once, tasks write in transactions the driver commits
(gregor/spark/exactly_once.py). The source side is exactly-once for a streaming query: offsets
are in the checkpoint and each micro-batch reads exactly the planned offset ranges.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from pyspark.sql.datasource import (DataSource, DataSourceArrowWriter, DataSourceStreamArrowWriter,
                                    WriterCommitMessage)
from pyspark.sql.types import StructType

from .arrow import check_read_schema, check_sink_schema, read_ddl
from . import confluent, exactly_once, worker_heap
from .client import RecordWriter, check_subscribed_topics
from .options import (OptionError, SinkOptions, parse_sink_options, parse_source_options,
                      validate_source_options, wants_headers)
from .reader import GregorBatchReader, GregorStreamReader

log = logging.getLogger("gregor.spark")


class GregorDataSource(DataSource):
    """Spark data source `gregor` (registered automatically through the `pyspark_gregor` module,
    or explicitly with `gregor.spark.register(spark)`)."""

    @classmethod
    def name(cls) -> str:
        return "gregor"

    def schema(self):
        # Spark calls this when a read's DataFrame is created (load()), and only for reads:
        # the options are checked here so that mistakes fail at load(), as with Spark's Kafka
        # source, not at the first action.
        validate_source_options(self.options)
        check_subscribed_topics(self.options)      # a missing topic fails here, by its name
        formats = self._formats()
        if formats is not None:                    # valueFormat / keyFormat: typed structs
            return confluent.read_schema(wants_headers(self.options), formats)
        return read_ddl(wants_headers(self.options))

    def _formats(self):
        """The Schema Registry formats of the read, each with its latest schema (driver)."""
        if not hasattr(self, "_formats_"):
            formats = confluent.parse(self.options, confluent.single_topic(self.options))
            self._formats_ = None if formats is None else confluent.resolve_read(formats)
        return self._formats_

    def _check_schema(self, schema: StructType) -> None:
        if self._formats() is not None:
            return                                 # the struct columns come from the registry
        check_read_schema([(f.name, f.dataType.simpleString()) for f in schema.fields],
                          wants_headers(self.options))

    def reader(self, schema: StructType):
        self._check_schema(schema)
        return GregorBatchReader(parse_source_options(self.options, streaming=False),
                                 self._decoder())

    def streamReader(self, schema: StructType):
        self._check_schema(schema)
        return GregorStreamReader(parse_source_options(self.options, streaming=True),
                                  self._decoder())

    def _decoder(self):
        formats = self._formats()
        return None if formats is None else confluent.BatchDecoder(formats)

    def _sink_options(self, schema: StructType) -> SinkOptions:
        opts = parse_sink_options(self.options, [f.name for f in schema.fields])
        formats = confluent.parse(self.options, confluent.single_topic(self.options))
        fields = [(f.name, f.dataType.simpleString()) for f in schema.fields]
        check_sink_schema(confluent.sink_fields(fields, formats),
                          topic_option=opts.topic is not None)
        self._encoding = None if formats is None else confluent.resolve_write(formats, schema)
        return opts

    def writer(self, schema: StructType, overwrite: bool):
        if overwrite:
            # Spark's Kafka sink refuses it too: records in a topic cannot be replaced.
            raise OptionError("save mode 'overwrite' is not allowed for the gregor sink (a topic's "
                              "records cannot be replaced, as with Spark's Kafka sink); use "
                              ".mode('append')")
        return GregorBatchWriter(self._sink_options(schema), self._encoding)

    def streamWriter(self, schema: StructType, overwrite: bool):
        # outputMode("complete") asks for a truncate (overwrite=True); as Spark's Kafka sink,
        # the rows are appended to the topic.
        return GregorStreamWriter(self._sink_options(schema), self._encoding)


@dataclass
class WrittenRows(WriterCommitMessage):
    rows: int


def _write_task(opts: SinkOptions, iterator) -> WrittenRows:
    writer = RecordWriter(opts.client, opts.topic)
    try:
        for batch in iterator:
            writer.write(batch)
    except BaseException:
        writer.abandon()   # closes the producer (never back to the pool); the task's error wins
        raise
    rows = writer.close()
    worker_heap.settle()
    return WrittenRows(rows)


class GregorBatchWriter(DataSourceArrowWriter):
    def __init__(self, opts: SinkOptions, encoding=None):
        self.opts = opts
        self.encoding = encoding          # valueFormat=avro: struct columns -> framed Avro
        self.write_id = exactly_once.new_write_id()

    def write(self, iterator):
        iterator = confluent.encoding(iterator, self.encoding)
        if self.opts.exactly_once:
            return exactly_once.write_task(self.opts, iterator, self.write_id)
        return _write_task(self.opts, iterator)

    def commit(self, messages) -> None:
        if self.opts.exactly_once:
            rows = exactly_once.end_all(self.opts.client, messages, commit=True)
            log.info("gregor sink: committed %d rows in one transaction per task", rows)
            return
        log.info("gregor sink: wrote %d rows", sum(m.rows for m in messages if m is not None))

    def abort(self, messages) -> None:
        if self.opts.exactly_once:
            rows = exactly_once.end_all(self.opts.client, messages, commit=False)
            # A batch write inside a streaming query's foreachBatch (to_topic) names its
            # transactions after the query, not this write: the tasks' messages say which.
            base = (exactly_once.base_of(messages)
                    or f"{self.opts.transactional_id_prefix}-{self.write_id}")
            exactly_once.fence_failed(self.opts.client, base, messages,
                                      self.opts.transaction_timeout_ms)
            log.warning("gregor sink: job failed; aborted the transactions of finished tasks "
                        "(%d rows never become visible to read_committed readers) and of "
                        "failed ones", rows)
            return
        written = sum(m.rows for m in messages if m is not None)
        log.warning("gregor sink: job failed after %d rows were already written by finished tasks; "
                    "those records stay in the topic (the sink is at-least-once)", written)


class GregorStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, opts: SinkOptions, encoding=None):
        self.opts = opts
        self.encoding = encoding
        self.write_id = exactly_once.new_write_id()

    def write(self, iterator):
        iterator = confluent.encoding(iterator, self.encoding)
        if self.opts.exactly_once:
            return exactly_once.write_task(self.opts, iterator, self.write_id)
        return _write_task(self.opts, iterator)

    def commit(self, messages, batchId: int) -> None:
        if self.opts.exactly_once:
            rows = exactly_once.end_all(self.opts.client, messages, commit=True)
            log.info("gregor sink: micro-batch %d committed %d rows", batchId, rows)
            return
        log.info("gregor sink: micro-batch %d wrote %d rows", batchId,
                 sum(m.rows for m in messages if m is not None))

    def abort(self, messages, batchId: int) -> None:
        if self.opts.exactly_once:
            exactly_once.end_all(self.opts.client, messages, commit=False)
            exactly_once.fence_failed(self.opts.client, exactly_once.base_of(messages),
                                      messages, self.opts.transaction_timeout_ms)
            log.warning("gregor sink: micro-batch %d failed; its transactions are aborted and "
                        "it is written again when retried", batchId)
            return
        log.warning("gregor sink: micro-batch %d failed; records of finished tasks stay in the topic and "
                    "are written again when the batch is retried (at-least-once)", batchId)


__all__ = ["GregorDataSource", "OptionError"]
