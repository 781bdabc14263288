"""JSON Schema serializer and deserializer with Confluent framing: the header then the value
as compact UTF-8 JSON (as confluent-kafka writes it). Values are validated with jsonschema
before anything is sent, and again when read."""
from __future__ import annotations

import json

import jsonschema

from .base import BaseDeserializer, BaseSerializer
from .errors import SerializationError
from .framing import header, parse


def validator_for(text: str):
    try:
        schema = json.loads(text)
    except ValueError as e:
        raise SerializationError(f"invalid JSON Schema (not JSON): {e}") from e
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as e:
        raise SerializationError(f"invalid JSON Schema: {e.message}") from e
    return schema, cls(schema)


def _check(validator, value):
    err = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if err is not None:
        where = "/".join(str(p) for p in err.absolute_path) or "(root)"
        raise SerializationError(f"value does not match the JSON Schema at {where}: "
                                 f"{err.message}")


class JSONSerializer(BaseSerializer):
    """JSONSerializer(schema_str, registry, to_dict=None, conf=None): values validated, then
    written as Confluent-framed JSON."""

    schema_type = "JSON"

    def __init__(self, schema_str: str, schema_registry_client, to_dict=None,
                 conf: dict | None = None, *, field: str = "value"):
        self._schema_obj, self._validator = validator_for(schema_str)
        super().__init__(schema_registry_client, schema_str, conf, field=field)
        self._to_dict = to_dict

    def record_name(self):
        return self._schema_obj.get("title") if isinstance(self._schema_obj, dict) else None

    def adopt(self, schema):
        return validator_for(schema.schema_str)[1]

    def precheck(self, value) -> None:
        if self._conf["use.latest.version"] or self._conf["use.schema.id"] is not None:
            return                        # checked against the registered schema instead
        _check(self._validator, self._to_dict(value, None) if self._to_dict else value)

    def encode(self, value, schema_id: int, state) -> bytes:
        if self._to_dict is not None:
            value = self._to_dict(value, None)
        if state is not None:
            _check(state, value)
        return header(schema_id) + json.dumps(value, separators=(",", ":"),
                                              ensure_ascii=False).encode("utf-8")


class JSONDeserializer(BaseDeserializer):
    """JSONDeserializer(schema_str=None, from_dict=None, schema_registry_client=None,
    conf=None): values validated against schema_str, or the writer's schema from the
    registry (found by the record's id)."""

    def __init__(self, schema_str: str | None = None, from_dict=None,
                 schema_registry_client=None, conf: dict | None = None, *,
                 field: str = "value"):
        if schema_str is None and schema_registry_client is None:
            raise ValueError("JSONDeserializer needs a schema or a registry client")
        super().__init__(schema_registry_client, conf, field=field)
        self._validator = validator_for(schema_str)[1] if schema_str else None
        self._from_dict = from_dict

    def reader_for(self, schema_id: int, topic: str):
        if self._validator is not None:
            return self._validator
        latest = self.latest(topic)
        schema = latest.schema if latest is not None else self.writer_schema(schema_id)
        return validator_for(schema.schema_str)[1]

    def deserialize(self, topic: str, data):
        if data is None:
            return None
        sid, payload = parse(data)
        validator = self._validator or self.reader(sid, topic)
        try:
            value = json.loads(bytes(payload))
        except ValueError as e:
            raise SerializationError(f"JSON payload does not parse: {e}") from e
        _check(validator, value)
        return self._from_dict(value, None) if self._from_dict is not None else value
