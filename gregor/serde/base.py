"""What the Avro, JSON Schema and Protobuf serde share: the configuration (confluent-kafka's
names), finding the schema id to write under, the registry lookups a reader needs, and the
two calling conventions (gregor's serialize(topic, value) and confluent-kafka's
serializer(value, ctx))."""
from __future__ import annotations

import copy
import threading

from .errors import SerializationError, UnknownSchemaError
from .framing import parse
from .subjects import SerializationContext, strategy

SERIALIZER_CONF = {"auto.register.schemas": True, "normalize.schemas": False,
                   "use.schema.id": None, "use.latest.version": False,
                   "subject.name.strategy": None}
DESERIALIZER_CONF = {"use.latest.version": False, "subject.name.strategy": None}


def make_schema(registry, text: str, schema_type: str, references=()):
    """A Schema of the registry client's own kind (gregor's or confluent-kafka's)."""
    if type(registry).__module__.startswith("confluent_kafka"):
        from confluent_kafka.schema_registry import Schema, SchemaReference
        return Schema(text, schema_type,
                      [SchemaReference(r.name, r.subject, r.version) for r in references])
    from ..schema_registry import Schema
    return Schema(text, schema_type, tuple(references))


def make_reference(registry, name: str, subject: str, version: int):
    if type(registry).__module__.startswith("confluent_kafka"):
        from confluent_kafka.schema_registry import SchemaReference
    else:
        from ..schema_registry import SchemaReference
    return SchemaReference(name, subject, version)


def _conf(defaults: dict, conf: dict | None, what: str) -> dict:
    conf = dict(conf or {})
    unknown = set(conf) - set(defaults)
    if unknown:
        raise ValueError(f"unknown {what} config {sorted(unknown)}; known: {sorted(defaults)}")
    return {**defaults, **conf}


def _context(ctx, field: str) -> SerializationContext:
    if isinstance(ctx, str):
        return SerializationContext(ctx, field)
    return ctx


class Serde:
    """Common to serializers and deserializers: the field they serve (key or value)."""

    field = "value"

    def bind_field(self, field: str):
        """A copy serving `field` ("key" or "value"); gregor's Producer and Consumer call this
        for key.serializer / key.deserializer."""
        if field == self.field:
            return self
        other = copy.copy(self)
        other.field = field
        other._reset_caches()
        return other

    def _reset_caches(self):
        pass


class BaseSerializer(Serde):
    """Subclasses set schema_type and implement record_name(), encode(value) -> bytes (raising
    SerializationError for a value that does not match) and, for use.latest.version, adopt()."""

    schema_type = "AVRO"

    def __init__(self, registry, schema_str: str, conf: dict | None = None, *,
                 field: str = "value", references=()):
        self._registry = registry
        self._conf = _conf(SERIALIZER_CONF, conf, "serializer")
        self._strategy = strategy(self._conf["subject.name.strategy"])
        self.field = field
        self._schema = make_schema(registry, schema_str, self.schema_type, references)
        self._lock = threading.Lock()
        self._reset_caches()

    def _reset_caches(self):
        self._ids: dict[str, tuple] = {}         # subject -> (schema id, encoder state)

    def record_name(self) -> str | None:
        return None

    def subject(self, topic: str) -> str:
        return self._strategy(SerializationContext(topic, self.field), self.record_name())

    def _writer_for(self, topic: str):
        subject = self.subject(topic)
        got = self._ids.get(subject)
        if got is not None:
            return got
        with self._lock:
            got = self._ids.get(subject)
            if got is None:
                got = self._resolve(subject)
                self._ids[subject] = got
        return got

    def _resolve(self, subject: str):
        c = self._conf
        reg = self._registry
        if c["use.schema.id"] is not None:
            sid = int(c["use.schema.id"])
            return sid, self.adopt(reg.get_schema(sid))
        if c["use.latest.version"]:
            latest = reg.get_latest_version(subject)
            return latest.schema_id, self.adopt(latest.schema)
        if c["auto.register.schemas"]:
            return reg.register_schema(subject, self._schema, c["normalize.schemas"]), None
        return reg.lookup_schema(subject, self._schema, c["normalize.schemas"]).schema_id, None

    def adopt(self, schema):
        """Encoder state for writing with another registered schema (use.latest.version /
        use.schema.id); None means this serializer's own schema."""
        return None

    def schema_id(self, topic: str) -> int:
        """The id this serializer writes under for the topic (registering when configured)."""
        return self._writer_for(topic)[0]

    def serialize(self, topic: str, value) -> bytes | None:
        if value is None:
            return None
        self.precheck(value)
        sid, state = self._writer_for(topic)
        return self.encode(value, sid, state)

    def __call__(self, obj, ctx=None):
        if obj is None:
            return None
        ctx = _context(ctx, self.field)
        if ctx is None:
            raise TypeError("a SerializationContext (topic, field) is needed to pick the subject")
        self.precheck(obj)
        sub = self._strategy(ctx, self.record_name())
        got = self._ids.get(sub)
        if got is None:
            with self._lock:
                got = self._ids.setdefault(sub, self._resolve(sub))
        return self.encode(obj, *got)

    def precheck(self, value) -> None:
        """Refuse a value before any registry call (a bad value registers nothing)."""

    def encode(self, value, schema_id: int, state) -> bytes:
        raise NotImplementedError


class BaseDeserializer(Serde):
    """Subclasses implement reader_for(schema id, writer Schema) -> a decoder state and
    decode(payload, state)."""

    def __init__(self, registry, conf: dict | None = None, *, field: str = "value"):
        self._registry = registry
        self._conf = _conf(DESERIALIZER_CONF, conf, "deserializer")
        self._strategy = strategy(self._conf["subject.name.strategy"])
        self.field = field
        self._lock = threading.Lock()
        self._reset_caches()

    def _reset_caches(self):
        self._readers: dict[int, object] = {}

    def subject(self, topic: str, record_name: str | None = None) -> str:
        return self._strategy(SerializationContext(topic, self.field), record_name)

    def latest(self, topic: str):
        """The subject's latest RegisteredSchema when use.latest.version is set, else None."""
        if not self._conf["use.latest.version"]:
            return None
        return self._registry.get_latest_version(self.subject(topic))

    def writer_schema(self, schema_id: int, fmt: str | None = None):
        try:
            return self._registry.get_schema(schema_id, fmt=fmt) if fmt else \
                self._registry.get_schema(schema_id)
        except Exception as e:
            if getattr(e, "error_code", None) == 40403 or getattr(e, "http_status_code",
                                                                  None) == 404:
                raise UnknownSchemaError(f"schema id {schema_id} is not in the registry") from e
            raise

    def reader(self, schema_id: int, topic: str):
        got = self._readers.get(schema_id)
        if got is None:
            with self._lock:
                got = self._readers.get(schema_id)
                if got is None:
                    got = self.reader_for(schema_id, topic)
                    self._readers[schema_id] = got
        return got

    def deserialize(self, topic: str, data):
        if data is None:
            return None
        sid, payload = parse(data)
        return self.decode(payload, self.reader(sid, topic))

    def __call__(self, data, ctx=None):
        if data is None:
            return None
        ctx = _context(ctx, self.field)
        return self.deserialize(ctx.topic if ctx is not None else "", data)

    def reader_for(self, schema_id: int, topic: str):
        raise NotImplementedError

    def decode(self, payload, state):
        raise NotImplementedError


__all__ = ["BaseSerializer", "BaseDeserializer", "SerializationError", "make_schema"]
