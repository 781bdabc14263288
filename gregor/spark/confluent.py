"""Schema-Registry formats for the gregor data source: `valueFormat` / `keyFormat` (avro,
json, protobuf) with `schemaRegistryUrl` turn the binary key/value columns into structs
typed by the subject's latest schema on read, and a struct column into Confluent-framed Avro
on write.

    spark.read.format("gregor").option("subscribe", "orders")
         .option("valueFormat", "avro").option("schemaRegistryUrl", url).load()

The driver reads the subject's latest schema once (it fixes the DataFrame's type); tasks
decode with it as the reader schema and fetch writers' schemas by id (cached per worker).
A record that cannot be decoded fails the task with an error naming its topic, partition and
offset (mode=FAILFAST, the default) or becomes null (mode=PERMISSIVE)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import pyarrow as pa

from .options import OptionError

FORMATS = ("avro", "json", "protobuf")
_REGISTRY_PREFIX = "schemaregistry."


def _get(options, name):
    low = name.lower()
    for k, v in options.items():
        if k.lower() == low:
            return v
    return None


@dataclass(frozen=True)
class FieldFormat:
    """How one column (key or value) is encoded: format, subject and, once resolved on the
    driver, the reader schema's text and type."""
    column: str
    format: str
    subject: str
    schema_str: str = ""
    schema_type: str = "AVRO"
    message: str | None = None        # protobuf: the message's full name


@dataclass(frozen=True)
class ConfluentOptions:
    url: str
    registry_conf: dict = field(default_factory=dict)
    fields: tuple = ()
    permissive: bool = False

    def client(self):
        from gregor.schema_registry import SchemaRegistryClient
        return SchemaRegistryClient({"url": self.url, **self.registry_conf})


def parse(options, topic: str | None) -> ConfluentOptions | None:
    """The formats asked for by the options, or None when neither key nor value has one."""
    wanted = {}
    for column in ("key", "value"):
        fmt = _get(options, f"{column}Format")
        if fmt is None:
            continue
        fmt = fmt.strip().lower()
        if fmt not in FORMATS:
            raise OptionError(f"option '{column}Format' is {fmt!r}; use one of {', '.join(FORMATS)}")
        wanted[column] = fmt
    if not wanted:
        return None
    url = _get(options, "schemaRegistryUrl")
    if not url:
        raise OptionError("option 'schemaRegistryUrl' must be set with keyFormat/valueFormat "
                          "(for example http://127.0.0.1:8081)")
    mode = (_get(options, "mode") or "FAILFAST").upper()
    if mode not in ("FAILFAST", "PERMISSIVE"):
        raise OptionError(f"option 'mode' is {mode!r}; use FAILFAST (the default: a record that "
                          "does not decode fails the query) or PERMISSIVE (it becomes null)")
    conf = {k[len(_REGISTRY_PREFIX):]: v for k, v in options.items()
            if k.lower().startswith(_REGISTRY_PREFIX)}
    fields = []
    for column, fmt in wanted.items():
        subject = _get(options, f"{column}Subject")
        if subject is None:
            if topic is None:
                raise OptionError(f"option '{column}Subject' must be set when more than one "
                                  f"topic is read or written (the default is <topic>-{column})")
            subject = f"{topic}-{column}"
        fields.append(FieldFormat(column, fmt, subject,
                                  message=_get(options, f"{column}Message")))
    return ConfluentOptions(url, conf, tuple(fields), mode == "PERMISSIVE")


def single_topic(options) -> str | None:
    subscribe = _get(options, "subscribe")
    if subscribe and "," not in subscribe.strip(","):
        return subscribe.strip().strip(",")
    return _get(options, "topic")


# -- read ------------------------------------------------------------------------------------

def resolve_read(opts: ConfluentOptions) -> ConfluentOptions:
    """opts with each field's latest schema read from the registry (on the driver)."""
    reg = opts.client()
    out = []
    for f in opts.fields:
        try:
            latest = reg.get_latest_version(f.subject)
        except Exception as e:
            raise OptionError(f"{f.column}Format={f.format}: cannot read the latest schema of "
                              f"subject {f.subject!r} from {opts.url}: {e}") from None
        schema = latest.schema
        if f.format == "protobuf":
            schema = reg.get_version(f.subject, latest.version, fmt="serialized").schema
        want = {"avro": "AVRO", "json": "JSON", "protobuf": "PROTOBUF"}[f.format]
        if schema.schema_type != want:
            raise OptionError(f"{f.column}Format={f.format} but subject {f.subject!r} holds a "
                              f"{schema.schema_type} schema")
        out.append(FieldFormat(f.column, f.format, f.subject, schema.schema_str,
                               schema.schema_type, f.message))
    return ConfluentOptions(opts.url, opts.registry_conf, tuple(out), opts.permissive)


def arrow_type_of(f: FieldFormat, registry=None) -> pa.DataType:
    if f.format == "avro":
        from gregor.serde.avro import parse_avro
        from gregor.serde.avro_types import arrow_type
        return arrow_type(parse_avro(f.schema_str))
    if f.format == "json":
        from .confluent_json import json_arrow_type
        return json_arrow_type(json.loads(f.schema_str))
    from .confluent_protobuf import message_class, proto_arrow_type
    return proto_arrow_type(message_class(f, registry).DESCRIPTOR)


def read_schema(include_headers: bool, opts: ConfluentOptions):
    """The source's StructType with the formatted columns as typed structs (built from Arrow
    types: the data source's driver process has no SparkContext to parse DDL with)."""
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import StructField, StructType
    from .arrow import arrow_read_schema
    reg = opts.client() if any(f.format == "protobuf" for f in opts.fields) else None
    typed = {f.column: arrow_type_of(f, reg) for f in opts.fields}
    return StructType([StructField(f.name, from_arrow_type(typed.get(f.name, f.type)), True)
                       for f in arrow_read_schema(include_headers)])


class BatchDecoder:
    """On a task: Arrow batches of the source with their key / value columns decoded."""

    def __init__(self, opts: ConfluentOptions):
        self.opts = opts
        self._decoders = None

    def _make(self):
        reg = self.opts.client()
        out = {}
        for f in self.opts.fields:
            if f.format == "avro":
                from gregor.serde.avro_arrow import AvroArrowDecoder
                out[f.column] = AvroArrowDecoder(reg, schema_str=f.schema_str,
                                                 permissive=self.opts.permissive)
            elif f.format == "json":
                from .confluent_json import JsonColumnDecoder
                out[f.column] = JsonColumnDecoder(f.schema_str, self.opts.permissive)
            else:
                from .confluent_protobuf import ProtobufColumnDecoder
                out[f.column] = ProtobufColumnDecoder(f, reg, self.opts.permissive)
        return out

    def decode(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if self._decoders is None:
            self._decoders = self._make()
        cols = list(batch.columns)
        names = batch.schema.names
        for column, dec in self._decoders.items():
            i = names.index(column)
            try:
                decoded, _ = dec.decode(cols[i])
            except Exception as e:
                row = getattr(e, "row", None)
                where = ""
                if row is not None:
                    topic = batch.column(names.index("topic"))[row].as_py()
                    part = batch.column(names.index("partition"))[row].as_py()
                    offset = batch.column(names.index("offset"))[row].as_py()
                    where = f" of the record at {topic}-{part} offset {offset}"
                raise ValueError(f"{column}Format={dec_format(self.opts, column)}: the {column}"
                                 f"{where} does not decode: {getattr(e, 'reason', e)} (set "
                                 "mode=PERMISSIVE to read such records as null)") from None
            cols[i] = spark_arrow(decoded)
        return pa.RecordBatch.from_arrays(cols, names=names)


_SPARK_ARROW: dict = {}


def spark_arrow(arr: pa.Array) -> pa.Array:
    """arr as the Arrow type Spark expects for its Spark type (timestamps in microseconds:
    Avro's timestamp-millis decodes as ms)."""
    t = _SPARK_ARROW.get(arr.type)
    if t is None:
        from pyspark.sql.pandas.types import from_arrow_type, to_arrow_type
        t = _SPARK_ARROW[arr.type] = to_arrow_type(from_arrow_type(arr.type), timezone="UTC")
    return arr if t == arr.type else arr.cast(t)


def dec_format(opts, column):
    return next(f.format for f in opts.fields if f.column == column)


# -- write -----------------------------------------------------------------------------------

RECORD_NAME = "topLevelRecord"       # the name Spark's to_avro gives a struct's record


def resolve_write(opts: ConfluentOptions, schema) -> ConfluentOptions:
    """On the driver: each formatted sink column's Avro schema, derived from its Spark type,
    registered under its subject (or found: registering is idempotent); schema_str becomes
    'id|schema text' for the tasks."""
    from pyspark.sql.pandas.types import to_arrow_type
    from gregor.serde.avro_types import avro_schema
    from gregor.serde.base import make_schema
    reg = opts.client()
    out = []
    for f in opts.fields:
        if f.format != "avro":
            raise OptionError(f"{f.column}Format={f.format} is read-only; the sink writes avro")
        try:
            spark_field = schema[f.column]
        except KeyError:
            raise OptionError(f"{f.column}Format=avro but the DataFrame has no "
                              f"'{f.column}' column") from None
        # the session's zone is irrelevant: Spark's timestamps are UTC instants
        t = to_arrow_type(spark_field.dataType, timezone="UTC")
        text = json.dumps(avro_schema(t, RECORD_NAME, None, False))
        try:
            sid = reg.register_schema(f.subject, make_schema(reg, text, "AVRO"))
        except Exception as e:
            raise OptionError(f"{f.column}Format=avro: registering the schema of column "
                              f"'{f.column}' under {f.subject!r} failed: {e}") from None
        out.append(FieldFormat(f.column, "avro", f.subject, f"{sid}|{text}"))
    return ConfluentOptions(opts.url, opts.registry_conf, tuple(out), opts.permissive)


def sink_fields(fields, opts: ConfluentOptions | None):
    """(name, type) of the sink's columns as the sink checks them: encoded ones are binary."""
    if opts is None:
        return fields
    encoded = {f.column for f in opts.fields}
    return [(n, "binary" if n in encoded else t) for n, t in fields]


def encoding(iterator, opts: ConfluentOptions | None):
    """The sink's Arrow batches with their formatted columns as Confluent-framed Avro."""
    if opts is None:
        yield from iterator
        return
    from gregor.serde.avro import parse_avro
    from gregor.serde.avro_arrow import encode_rows
    plans = []
    for f in opts.fields:
        sid, text = f.schema_str.split("|", 1)
        plans.append((f.column, int(sid), parse_avro(text)))
    for batch in iterator:
        cols, names = list(batch.columns), batch.schema.names
        for column, sid, parsed in plans:
            i = names.index(column)
            cols[i] = encode_rows(cols[i], sid, parsed)
        yield pa.RecordBatch.from_arrays(cols, names=names)
