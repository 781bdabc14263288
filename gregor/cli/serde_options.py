"""--value-format / --key-format for `gregor produce` and `gregor consume`: records as
Confluent-framed Avro, JSON Schema or Protobuf through a Schema Registry. produce reads one
JSON value per line and writes it with the schema of --schema FILE (registered under <topic>-value);
consume prints each decoded value as one line of JSON (with --schema FILE as the reader
schema, else as written). Protobuf values are protobuf's JSON mapping of the message
--message-name (default the .proto file's first message), see protobuf_values."""
from __future__ import annotations

import json
from pathlib import Path

import click

FORMATS = ("avro", "json", "protobuf")


def serde_options(fn):
    """The registry options shared by produce and consume."""
    for decorator in reversed([
        click.option("--value-format", type=click.Choice(FORMATS), default=None,
                     help="Values as Confluent-framed Avro, JSON Schema or Protobuf "
                          "(needs --schema-registry)."),
        click.option("--key-format", type=click.Choice(FORMATS), default=None,
                     help="Keys likewise."),
        click.option("--schema", "schema_path", type=click.Path(exists=True, dir_okay=False),
                     default=None,
                     help="The value schema (.avsc / JSON Schema / .proto file)."),
        click.option("--message-name", default=None, metavar="NAME",
                     help="Protobuf: the message of --schema to write (default its first)."),
        click.option("--key-schema", "key_schema_path",
                     type=click.Path(exists=True, dir_okay=False), default=None,
                     help="The key schema."),
        click.option("--schema-registry", "registry_url", envvar="GREGOR_SCHEMA_REGISTRY_URL",
                     default=None, metavar="URL",
                     help="Schema Registry URL (env GREGOR_SCHEMA_REGISTRY_URL)."),
        click.option("--registry-property", "registry_props", multiple=True,
                     metavar="KEY=VALUE",
                     help="Registry client config, e.g. basic.auth.user.info=user:pass."),
    ]):
        fn = decorator(fn)
    return fn


def _registry(url, props):
    if not url:
        raise click.BadParameter("--value-format/--key-format need --schema-registry URL",
                                 param_hint="--schema-registry")
    from ..schema_registry import SchemaRegistryClient
    from .client_options import parse_props
    return SchemaRegistryClient({"url": url, **parse_props(props, "--registry-property")})


def _schema_text(path, hint):
    return Path(path).read_text() if path else None


class FromJsonLines:
    """serialize(topic, line): the line parsed as JSON, then written by the serializer."""

    def __init__(self, inner):
        self.inner = inner

    def bind_field(self, field):
        return FromJsonLines(self.inner.bind_field(field))

    def serialize(self, topic, line):
        if line is None:
            return None
        try:
            value = json.loads(line)
        except ValueError as e:
            raise ValueError(f"the line is not JSON ({e}): {line[:80]!r}") from None
        return self.inner.serialize(topic, value)


class ToJsonText:
    """deserialize(topic, data): the decoded value as one line of JSON (bytes), so every
    --format prints it."""

    def __init__(self, inner):
        self.inner = inner

    def deserialize(self, topic, data):
        value = self.inner.deserialize(topic, data)
        return json.dumps(value, ensure_ascii=False, default=_jsonable).encode()


def _jsonable(x):
    if isinstance(x, (bytes, bytearray)):
        return x.decode("latin-1")
    return str(x)                        # datetimes, decimals, uuids


def producer_serializers(fmt, key_fmt, schema_path, key_schema_path, url, props,
                         message_name=None) -> dict:
    """Producer config entries (value.serializer / key.serializer) for the options."""
    out = {}
    if not fmt and not key_fmt:
        return out
    reg = _registry(url, props)
    for field, f, path in (("value", fmt, schema_path), ("key", key_fmt, key_schema_path)):
        if not f:
            continue
        text = _schema_text(path, field)
        if text is None:
            opt = "--schema" if field == "value" else "--key-schema"
            raise click.BadParameter(f"--{field}-format {f} needs {opt} FILE to write with",
                                     param_hint=opt)
        if f == "protobuf":
            from .protobuf_values import serializer
            out[f"{field}.serializer"] = FromJsonLines(serializer(reg, path, message_name,
                                                                  field))
            continue
        out[f"{field}.serializer"] = FromJsonLines(_serializer(f, reg, text, field))
    return out


def _serializer(fmt, reg, text, field):
    from ..serde import AvroSerializer, SerializationError
    try:
        if fmt == "avro":
            return AvroSerializer(reg, text, field=field)
        from ..serde.json_schema import JSONSerializer
        return JSONSerializer(text, reg, field=field)
    except SerializationError as e:
        raise click.BadParameter(str(e), param_hint="--schema") from None


def consumer_deserializers(fmt, key_fmt, schema_path, key_schema_path, url, props,
                           message_name=None) -> dict:
    out = {}
    if not fmt and not key_fmt:
        return out
    reg = _registry(url, props)
    for field, f, path in (("value", fmt, schema_path), ("key", key_fmt, key_schema_path)):
        if not f:
            continue
        text = _schema_text(path, field)
        if f == "protobuf":         # read as written (the registry's descriptor)
            from .protobuf_values import deserializer
            de = deserializer(reg, field)
        elif f == "avro":
            from ..serde import AvroDeserializer
            de = AvroDeserializer(reg, text, field=field)
        else:
            from ..serde.json_schema import JSONDeserializer
            de = JSONDeserializer(text, schema_registry_client=reg, field=field)
        out[f"{field}.deserializer"] = ToJsonText(de)
    return out


