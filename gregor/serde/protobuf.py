"""Protobuf serializer and deserializer with Confluent framing: the header, the message's
index path in its .proto file, then the message's bytes. Schemas are registered as
confluent-kafka registers them: base64 of the serialized FileDescriptorProto, each imported
file (but the well-known google/protobuf, google/type and confluent ones) registered under its
own path as a reference."""
from __future__ import annotations

import base64

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from .base import BaseDeserializer, BaseSerializer, make_reference, make_schema
from .errors import SerializationError
from .framing import decode_indexes, encode_indexes, header

_BUILTIN_PREFIXES = ("confluent/", "google/protobuf/", "google/type/")
PROTOBUF_CONF = ("skip.known.types",)


def is_builtin(file_name: str) -> bool:
    return file_name.startswith(_BUILTIN_PREFIXES)


def schema_text(file_descriptor) -> str:
    return base64.standard_b64encode(file_descriptor.serialized_pb).decode("ascii")


def index_path(desc) -> list[int]:
    """Where a message descriptor sits in its file: [top-level index, nested index, ...]."""
    path = []
    while desc.containing_type is not None:
        parent = desc.containing_type
        path.append(list(parent.nested_types).index(desc))
        desc = parent
    path.append(list(desc.file.message_types_by_name.values()).index(desc))
    return path[::-1]


class ProtobufSerializer(BaseSerializer):
    """ProtobufSerializer(message_class, registry, conf=None): messages of that generated
    class written as confluent-kafka's ProtobufSerializer writes them."""

    schema_type = "PROTOBUF"

    def __init__(self, msg_type, schema_registry_client, conf: dict | None = None, *,
                 field: str = "value"):
        conf = dict(conf or {})
        self._skip_known = bool(conf.pop("skip.known.types", True))
        self._msg_type = msg_type
        desc = msg_type.DESCRIPTOR
        self._file = desc.file
        self._indexes = encode_indexes(index_path(desc))
        super().__init__(schema_registry_client, schema_text(self._file), conf, field=field)

    def record_name(self):
        return self._msg_type.DESCRIPTOR.full_name

    def _references(self, file_desc) -> list:
        refs = []
        for dep in file_desc.dependencies:
            if self._skip_known and is_builtin(dep.name):
                continue
            sub_refs = self._references(dep)
            schema = make_schema(self._registry, schema_text(dep), "PROTOBUF", sub_refs)
            if self._conf["auto.register.schemas"]:
                self._registry.register_schema(dep.name, schema, self._conf["normalize.schemas"])
            got = self._registry.lookup_schema(dep.name, schema, self._conf["normalize.schemas"])
            refs.append(make_reference(self._registry, dep.name, dep.name, got.version))
        return refs

    def _resolve(self, subject: str):
        if self._file.dependencies and not self._schema.references:
            self._schema = make_schema(self._registry, schema_text(self._file), "PROTOBUF",
                                       self._references(self._file))
        return super()._resolve(subject)

    def encode(self, value, schema_id: int, state) -> bytes:
        if not isinstance(value, self._msg_type):
            raise SerializationError(f"expected a {self._msg_type.DESCRIPTOR.full_name} "
                                     f"message, got {type(value).__name__}")
        return header(schema_id) + self._indexes + value.SerializeToString()


class ProtobufDeserializer(BaseDeserializer):
    """ProtobufDeserializer(message_class=None, conf=None, schema_registry_client=None):
    with a class, payloads parse into it (no registry needed); without one, the writer's
    schema is fetched (format=serialized, with its references) and the message at the
    record's index path is built from it."""

    def __init__(self, message_type=None, conf: dict | None = None,
                 schema_registry_client=None, *, field: str = "value"):
        if message_type is None and schema_registry_client is None:
            raise ValueError("ProtobufDeserializer needs a message class or a registry client")
        super().__init__(schema_registry_client, conf, field=field)
        self._msg_type = message_type
        self._pool = descriptor_pool.DescriptorPool()

    def deserialize(self, topic: str, data):
        if data is None:
            return None
        from .framing import parse
        sid, payload = parse(data)
        indexes, pos = decode_indexes(payload)
        cls = (self._msg_type if self._msg_type is not None
               else self.reader(sid, topic)[tuple(indexes)])
        try:
            return cls.FromString(bytes(payload[pos:]))
        except DecodeError as e:
            raise SerializationError(f"Protobuf payload does not decode: {e}") from e

    def reader_for(self, schema_id: int, topic: str):
        schema = self.writer_schema(schema_id, fmt="serialized")
        fd = self._add_file(f"schema-{schema_id}.proto", schema)
        return _ByIndexes(fd)

    def _add_file(self, name: str, schema):
        for ref in schema.references:
            try:
                self._pool.FindFileByName(ref.name)
                continue
            except KeyError:
                pass
            if is_builtin(ref.name):
                self._add_builtin(ref.name)
                continue
            reg = self._registry.get_version(ref.subject, ref.version, fmt="serialized")
            self._add_file(ref.name, reg.schema)
        proto = descriptor_pb2.FileDescriptorProto()
        try:
            proto.ParseFromString(base64.standard_b64decode(schema.schema_str))
        except (DecodeError, ValueError) as e:
            raise SerializationError(f"registry schema is not a serialized Protobuf "
                                     f"descriptor: {e}") from e
        proto.name = name
        for dep in proto.dependency:
            try:
                self._pool.FindFileByName(dep)
            except KeyError:
                self._add_builtin(dep)
        try:
            return self._pool.FindFileByName(name)
        except KeyError:
            return self._pool.Add(proto) or self._pool.FindFileByName(name)

    def _add_builtin(self, name: str):
        try:
            fd = descriptor_pool.Default().FindFileByName(name)
        except KeyError:
            raise SerializationError(f"Protobuf import {name!r} is neither a reference nor "
                                     "a known type") from None
        for dep in fd.dependencies:
            try:
                self._pool.FindFileByName(dep.name)
            except KeyError:
                self._add_builtin(dep.name)
        self._pool.Add(descriptor_pb2.FileDescriptorProto.FromString(fd.serialized_pb))


class _ByIndexes:
    """Message classes of one file, found by index path and built once."""

    def __init__(self, fd):
        self._fd = fd
        self._classes: dict = {}

    def __getitem__(self, path: tuple):
        cls = self._classes.get(path)
        if cls is None:
            try:
                desc = list(self._fd.message_types_by_name.values())[path[0]]
                for i in path[1:]:
                    desc = desc.nested_types[i]
            except IndexError:
                raise SerializationError(f"message index path {list(path)} is not in the "
                                         "writer's schema") from None
            cls = self._classes[path] = message_factory.GetMessageClass(desc)
        return cls
