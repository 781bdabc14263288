"""Avro serializer and deserializer with Confluent framing (fastavro's schemaless encoding,
as confluent-kafka's AvroSerializer writes it, so each reads the other's bytes)."""
from __future__ import annotations

import io

import fastavro

from .avro_schema import parse_avro, resolve_references
from .base import BaseDeserializer, BaseSerializer
from .errors import SerializationError
from .framing import header


def record_name_of(parsed) -> str | None:
    if isinstance(parsed, dict) and parsed.get("type") in ("record", "enum", "fixed"):
        return parsed.get("name")
    return None


class AvroSerializer(BaseSerializer):
    """AvroSerializer(registry, schema_str, conf=None, to_dict=None): values (dicts, or
    anything to_dict turns into one) written as Confluent-framed Avro. conf takes
    confluent-kafka's names: auto.register.schemas, use.latest.version, use.schema.id,
    normalize.schemas, subject.name.strategy ("topic", "record", "topic_record")."""

    schema_type = "AVRO"

    def __init__(self, registry, schema_str: str, conf: dict | None = None, to_dict=None, *,
                 field: str = "value", references=()):
        super().__init__(registry, schema_str, conf, field=field, references=references)
        named: dict = {}
        resolve_references(registry, references, named)
        self._parsed = parse_avro(schema_str, named)
        self._to_dict = to_dict

    def record_name(self):
        return record_name_of(self._parsed)

    @property
    def parsed_schema(self):
        return self._parsed

    def adopt(self, schema):
        named: dict = {}
        resolve_references(self._registry, schema.references, named)
        return parse_avro(schema.schema_str, named)

    def encode_arrow(self, values, topic: str):
        """A typed Arrow column (or table: its rows) as a binary array of framed Avro, for
        send_batch."""
        from .avro_arrow import encode_rows
        sid, state = self._writer_for(topic)
        return encode_rows(values, sid, state if state is not None else self._parsed)

    def encode(self, value, schema_id: int, state) -> bytes:
        if self._to_dict is not None:
            value = self._to_dict(value, None)
        out = io.BytesIO()
        out.write(header(schema_id))
        try:
            fastavro.schemaless_writer(out, state if state is not None else self._parsed, value)
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            raise SerializationError(f"value does not match the Avro schema: {e}") from e
        return out.getvalue()


class AvroDeserializer(BaseDeserializer):
    """AvroDeserializer(registry, schema_str=None, conf=None, from_dict=None): each record
    is read with the writer's schema (found by the id in its header) and resolved into the
    reader schema: schema_str when given, the subject's latest with use.latest.version,
    else the writer's own."""

    def __init__(self, registry, schema_str: str | None = None, conf: dict | None = None,
                 from_dict=None, *, field: str = "value", return_record_name: bool = False):
        super().__init__(registry, conf, field=field)
        self._reader_str = schema_str
        self._reader = parse_avro(schema_str) if schema_str else None
        self._from_dict = from_dict
        self._return_record_name = return_record_name

    def parsed_writer(self, schema_id: int):
        schema = self.writer_schema(schema_id)
        named: dict = {}
        resolve_references(self._registry, schema.references, named)
        return parse_avro(schema.schema_str, named)

    def reader_schema(self, topic: str):
        """The parsed reader schema for a topic, or None (read as written)."""
        if self._reader is not None:
            return self._reader
        latest = self.latest(topic)
        if latest is None:
            return None
        named: dict = {}
        resolve_references(self._registry, latest.schema.references, named)
        return parse_avro(latest.schema.schema_str, named)

    def reader_for(self, schema_id: int, topic: str):
        return self.parsed_writer(schema_id), self.reader_schema(topic)

    def decode_arrow(self, values, topic: str):
        """A binary array of this topic's framed values as an Arrow array of the reader
        schema's type (schema_str, else the subject's latest), decoded without a Python
        object per record (avro_arrow.AvroArrowDecoder)."""
        decoders = self._arrow
        dec = decoders.get(topic)
        if dec is None:
            from .avro_arrow import AvroArrowDecoder
            if self._reader_str is not None:
                dec = AvroArrowDecoder(self._registry, schema_str=self._reader_str)
            else:
                dec = AvroArrowDecoder(self._registry, subject=self.subject(topic))
            decoders[topic] = dec
        return dec.decode(values)[0]

    def _reset_caches(self):
        super()._reset_caches()
        self._arrow = {}

    def decode(self, payload, state):
        writer, reader = state
        try:
            obj = fastavro.schemaless_reader(io.BytesIO(payload), writer, reader,
                                             return_record_name=self._return_record_name)
        except (EOFError, ValueError, TypeError, IndexError, KeyError, StopIteration) as e:
            raise SerializationError(f"Avro payload does not decode: {e}") from e
        if self._from_dict is not None:
            return self._from_dict(obj, None)
        return obj
