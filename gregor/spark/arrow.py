"""Arrow on both sides of the data source: the read schema (the Kafka connector's), building
RecordBatches from fetched records in column form, and checking / normalising sink batches."""
from __future__ import annotations

from typing import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from .options import OptionError

READ_DDL = ("key binary, value binary, topic string, partition int, offset long, "
            "timestamp timestamp, timestampType int")
HEADERS_DDL = "headers array<struct<key: string, value: binary>>"

HEADER_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
# Spark's TimestampType is microseconds since the epoch in UTC.
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")


def read_ddl(include_headers: bool) -> str:
    return READ_DDL + (", " + HEADERS_DDL if include_headers else "")


def arrow_read_schema(include_headers: bool) -> pa.Schema:
    fields = [pa.field("key", pa.binary()), pa.field("value", pa.binary()),
              pa.field("topic", pa.string()), pa.field("partition", pa.int32()),
              pa.field("offset", pa.int64()), pa.field("timestamp", TIMESTAMP_TYPE),
              pa.field("timestampType", pa.int32())]
    if include_headers:
        fields.append(pa.field("headers", HEADER_TYPE))
    return pa.schema(fields)


def build_batch(topic: str, partition: int, offsets, timestamps_ms, timestamp_types, keys, values,
                headers=None, *, include_headers: bool) -> pa.RecordBatch:
    """One RecordBatch from column lists (or numpy arrays) of one topic-partition."""
    n = len(offsets)
    ts = pa.array(timestamps_ms, pa.int64())
    cols = [pa.array(keys, pa.binary()), pa.array(values, pa.binary()),
            pa.repeat(pa.scalar(topic, pa.string()), n), pa.repeat(pa.scalar(partition, pa.int32()), n),
            pa.array(offsets, pa.int64()),
            pc.multiply(ts, pa.scalar(1000, pa.int64())).cast(TIMESTAMP_TYPE),
            pa.array(timestamp_types, pa.int32())]
    if include_headers:
        # a record without headers has null headers, as in Spark's Kafka source
        cols.append(pa.array([[{"key": k, "value": v} for k, v in h] if h else None for h in headers],
                             HEADER_TYPE))
    return pa.RecordBatch.from_arrays(cols, schema=arrow_read_schema(include_headers))


def check_read_schema(fields: Sequence[tuple[str, str]], include_headers: bool) -> None:
    """A schema given with .schema(...) is refused, as Spark's Kafka source refuses it: the
    source's columns are fixed. (A Python data source cannot tell a given schema from its own
    when they are equal, so only a different one can be refused.)"""
    want = [(f.name, _SPARK_TYPES[str(f.type)]) for f in arrow_read_schema(include_headers)]
    got = [(name, typ.replace(" ", "")) for name, typ in fields]
    if got != want:
        raise OptionError("the gregor source has a fixed schema and cannot be set with a custom one "
                          f"(as Spark's Kafka source): drop .schema(...); the columns are {read_ddl(include_headers)}")


_SPARK_TYPES = {"binary": "binary", "string": "string", "int32": "int", "int64": "bigint",
                "timestamp[us, tz=UTC]": "timestamp",
                "list<item: struct<key: string, value: binary>>": "array<struct<key:string,value:binary>>"}


# -- sink -------------------------------------------------------------------------------------

_SINK_TYPES = {
    "value": "string or binary", "key": "string or binary", "topic": "string",
    "partition": "int", "headers": "array<struct<key: string, value: binary>>",
}


def check_sink_schema(fields: Sequence[tuple[str, str]], topic_option: bool = False) -> None:
    """fields: (name, Spark simpleString type). Raises OptionError naming the column to fix.
    Names match case-sensitively, as in Spark's KafkaWriter; a `topic` column is not looked
    at when the `topic` option is set (the option wins)."""
    for name, typ in fields:
        lname = name
        if lname in ("value", "key") and typ not in ("string", "binary"):
            raise OptionError(f"column '{name}' has type {typ}; the gregor sink needs {_SINK_TYPES[lname]} "
                              f"(for example col('{name}').cast('string') or to_json(struct(...)))")
        if lname == "topic" and typ != "string" and not topic_option:
            raise OptionError(f"column 'topic' has type {typ}; the gregor sink needs string")
        if lname == "partition" and typ != "int":
            raise OptionError(f"column 'partition' has type {typ}; the gregor sink needs int "
                              "(cast it with col('partition').cast('int'))")
        if lname == "headers" and typ.replace(" ", "") != "array<struct<key:string,value:binary>>":
            raise OptionError(f"column 'headers' has type {typ}; the gregor sink needs "
                              f"{_SINK_TYPES['headers']}")


def _column(batch: pa.RecordBatch, name: str):
    i = batch.schema.get_field_index(name)  # case-sensitive, as Spark's KafkaWriter
    return None if i < 0 else batch.column(i)


def sink_columns(batch: pa.RecordBatch):
    """(value, key, topic, partition, headers) arrays of a sink batch; absent columns are None.
    value and key stay string or binary as they are: send_batch reads either."""
    return (_column(batch, "value"), _column(batch, "key"), _column(batch, "topic"),
            _column(batch, "partition"), _column(batch, "headers"))
