"""`--value-format protobuf` for produce and consume: a .proto file compiled in-process
(gregor.registry.protobuf_text, well-known imports only), values as protobuf's JSON mapping
(json_format) on both sides."""
from __future__ import annotations

from pathlib import Path

import click


def message_class(path: str, message_name: str | None):
    """The message class `message_name` (full or short name; default the file's first
    message, which is what Confluent's serializer writes with index [0]) of the file."""
    from google.protobuf import descriptor_pool, message_factory
    from ..registry.protobuf_text import ProtoSyntaxError, known_types, parse_proto
    from ..registry.schema_types import _add_well_known, _well_known_files
    text = Path(path).read_text()
    try:
        fd = parse_proto(text, known_types(_well_known_files(text)))
    except ProtoSyntaxError as e:
        raise click.BadParameter(f"{path}: {e}", param_hint="--schema") from None
    fd.name = Path(path).name
    if not fd.message_type:
        raise click.BadParameter(f"{path} has no message", param_hint="--schema")
    pool = descriptor_pool.DescriptorPool()
    _add_well_known(pool, fd)
    try:
        pool.Add(fd)
        file_desc = pool.FindFileByName(fd.name)
    except Exception as e:
        raise click.BadParameter(f"{path} does not build: {e}", param_hint="--schema") \
            from None
    names = list(file_desc.message_types_by_name)
    desc = file_desc.message_types_by_name[names[0]] if message_name is None else None
    for candidate in ([] if message_name is None else
                      [message_name, f"{fd.package}.{message_name}"]):
        try:
            desc = pool.FindMessageTypeByName(candidate)
            break
        except KeyError:
            continue
    if desc is None:
        raise click.BadParameter(f"no message {message_name!r} in {path} (has: "
                                 f"{', '.join(names)})", param_hint="--message-name")
    return message_factory.GetMessageClass(desc)


class FromDicts:
    """serialize(topic, dict): the dict read into the message class (json_format), then
    written by the Confluent-framed Protobuf serializer."""

    def __init__(self, cls, inner):
        self.cls, self.inner = cls, inner

    def bind_field(self, field):
        return FromDicts(self.cls, self.inner.bind_field(field))

    def serialize(self, topic, value):
        from google.protobuf import json_format
        try:
            msg = json_format.ParseDict(value, self.cls())
        except json_format.ParseError as e:
            raise ValueError(f"not a {self.cls.DESCRIPTOR.full_name}: {e}") from None
        return self.inner.serialize(topic, msg)


class ToDicts:
    """deserialize(topic, data): the decoded message as a dict (json_format, field names
    as in the .proto)."""

    def __init__(self, inner):
        self.inner = inner

    def deserialize(self, topic, data):
        from google.protobuf import json_format
        msg = self.inner.deserialize(topic, data)
        return None if msg is None else json_format.MessageToDict(
            msg, preserving_proto_field_name=True)


def serializer(reg, path, message_name, field):
    from ..serde.protobuf import ProtobufSerializer
    cls = message_class(path, message_name if field == "value" else None)
    return FromDicts(cls, ProtobufSerializer(cls, reg, field=field))


def deserializer(reg, field):
    from ..serde.protobuf import ProtobufDeserializer
    return ToDicts(ProtobufDeserializer(None, {}, reg, field=field))
