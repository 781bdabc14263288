"""Spark's Kafka source columns as Arrow: key, value, topic (dictionary-encoded), partition,
offset, timestamp, timestampType, headers (list<struct<key string, value binary>>). Built
from a partition's record arrays by both consumer decoders (columns.py, arrow_records.py)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

HEADER_STRUCT = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
HEADERS_TYPE = pa.list_(HEADER_STRUCT)


def headers_array(headers: list) -> pa.ListArray:
    """Per-record header lists [(key, value), ...] (None or [] for none) as one
    list<struct<key, value>> array: the pairs flattened into a struct array, plus offsets."""
    ends, hkeys, hvals = [0], [], []
    for h in headers:
        if h:
            for k, v in h:
                hkeys.append(k)
                hvals.append(v)
        ends.append(len(hkeys))
    structs = pa.StructArray.from_arrays(
        [pa.array(hkeys, pa.string()), pa.array(hvals, pa.binary())],
        fields=list(HEADER_STRUCT))
    return pa.ListArray.from_arrays(pa.array(ends, pa.int32()), structs, HEADERS_TYPE)


def spark_record_batch(topic: str, partition: int, keys, values, offsets, timestamps,
                       timestamp_types, headers) -> pa.RecordBatch:
    """The RecordBatch of Spark's Kafka source columns for one partition's record arrays;
    topic and partition are constant columns (topic dictionary-encoded)."""
    n = len(offsets)
    return pa.RecordBatch.from_arrays([
        keys, values,
        pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)),
                                       pa.array([topic], pa.string())),
        pa.array(np.full(n, partition, np.int32)),
        offsets, timestamps, timestamp_types, headers,
    ], names=["key", "value", "topic", "partition", "offset", "timestamp", "timestampType",
              "headers"])


def no_headers(n: int) -> pa.ListArray:
    return pa.ListArray.from_arrays(pa.array(np.zeros(n + 1, np.int32)),
                                    pa.array([], HEADER_STRUCT), HEADERS_TYPE)
