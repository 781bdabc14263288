"""from_confluent / to_confluent: Schema-Registry formats as column functions, for any
DataFrame of binary values (one read by Spark's own Kafka connector, a table of raw
messages...).

    df.select(from_confluent("value", url, subject="orders-value").alias("order"))
    df.select(to_confluent(struct("id", "item"), url, subject="orders-value").alias("value"))

Both run as Arrow UDFs: decoding is the data source's (the compiled Avro column decoder)."""
from __future__ import annotations


import pyarrow as pa

from .confluent import (RECORD_NAME, ConfluentOptions, FieldFormat, arrow_type_of,
                        resolve_read, spark_arrow)

_cache: dict = {}


def _column_decoder(opts: ConfluentOptions):
    """One decoder per worker process and options (the registry caches live in it)."""
    key = (opts.url, tuple(sorted(opts.registry_conf.items())), opts.fields, opts.permissive)
    dec = _cache.get(key)
    if dec is None:
        from .confluent import BatchDecoder
        dec = _cache[key] = BatchDecoder(opts)._make()["value"]
    return dec


def from_confluent(col, url: str, subject: str, format: str = "avro", *,
                   mode: str = "FAILFAST", message: str | None = None,
                   registry_options: dict | None = None):
    """A column of Confluent-framed values (binary) as structs typed by the subject's latest
    schema (read now, on the driver); older writers' records resolved into it. A value that
    does not decode fails the query (naming its row in the batch) or, with
    mode="PERMISSIVE", is null."""
    from pyspark.sql.functions import arrow_udf
    from pyspark.sql.pandas.types import from_arrow_type
    if format not in ("avro", "json", "protobuf"):
        raise ValueError(f"format {format!r}: use avro, json or protobuf")
    opts = resolve_read(ConfluentOptions(url, dict(registry_options or {}),
                                         (FieldFormat("value", format, subject,
                                                      message=message),),
                                         mode.upper() == "PERMISSIVE"))
    reg = opts.client() if format == "protobuf" else None
    spark_type = from_arrow_type(arrow_type_of(opts.fields[0], reg))

    def decode(values: pa.Array) -> pa.Array:
        dec = _column_decoder(opts)
        try:
            return spark_arrow(dec.decode(values)[0])
        except Exception as e:
            row = getattr(e, "row", None)
            where = f" (row {row} of the batch)" if row is not None else ""
            raise ValueError(f"from_confluent({subject!r}): a value{where} does not decode: "
                             f"{getattr(e, 'reason', e)}") from None

    return arrow_udf(decode, spark_type)(col)


def to_confluent(col, url: str, subject: str, schema_str: str | None = None, *,
                 record_name: str = RECORD_NAME, namespace: str | None = None,
                 registry_options: dict | None = None):
    """A struct (or any typed) column as Confluent-framed Avro (binary). Its schema is
    schema_str or, without it, derived from the column's type, and registered under the
    subject (registration is idempotent, so every task finds the same id)."""
    from pyspark.sql.functions import arrow_udf
    conf = dict(registry_options or {})

    def encode(values: pa.Array) -> pa.Array:
        key = ("encode", url, subject, schema_str, str(values.type))
        enc = _cache.get(key)
        if enc is None:
            from gregor.schema_registry import SchemaRegistryClient
            from gregor.serde.avro_arrow import AvroArrowEncoder
            reg = SchemaRegistryClient({"url": url, **conf})
            enc = _cache[key] = AvroArrowEncoder(reg, subject, schema_str,
                                                 arrow_type_=values.type,
                                                 record_name=record_name, namespace=namespace)
        return enc.encode(values)

    return arrow_udf(encode, "binary")(col)


__all__ = ["from_confluent", "to_confluent"]
