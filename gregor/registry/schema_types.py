"""The three schema types behind one interface: parse, canonical text, compatibility.

`parse_schema(schema_type, text, references)` returns a parsed schema with `schema_type`,
`canonical` (the text stored and served), `normalized` (what `normalize=true` registers) and
raises `InvalidSchema` naming the problem. `check(reader, writer)` lists what makes `reader`
unable to read `writer`'s data.
- AVRO: gregor.registry.avro (fastavro's parser, Avro-Java's canonical text).
- JSON: the schema checked against its draft's meta-schema by jsonschema; canonical text is
  the compact JSON (as Jackson writes it); normalized also sorts the keys.
- PROTOBUF: a serialized FileDescriptorProto in base64 (what confluent-kafka's
  ProtobufSerializer registers) or .proto source text (protobuf_text), checked by building
  it in a protobuf DescriptorPool beside its references and the well-known types; stored as
  sent, served as printed .proto text (protobuf_print) or, with `format=serialized`, as a
  base64 descriptor.
"""
from __future__ import annotations

import base64
import binascii
import json

from . import avro, avro_compat, json_text

TYPES = ("AVRO", "JSON", "PROTOBUF")


class InvalidSchema(ValueError):
    pass


class JsonSchema:
    schema_type = "JSON"

    def __init__(self, node, canonical: str, normalized: str):
        self.node = node
        self.canonical = canonical
        self.normalized = normalized


class ProtobufSchema:
    schema_type = "PROTOBUF"

    def __init__(self, descriptor, canonical: str, dependencies=()):
        self.descriptor = descriptor      # google.protobuf.descriptor_pb2.FileDescriptorProto
        self.canonical = canonical        # what was sent: base64 descriptor or .proto text
        self.normalized = canonical
        # the referenced files' descriptors, transitively (the checker compares their
        # messages where this schema's fields use them)
        self.dependencies = list(dependencies)

    def serialized(self) -> str:
        """`format=serialized`: the base64 FileDescriptorProto."""
        return base64.b64encode(self.descriptor.SerializeToString()).decode()

    def text(self) -> str:
        """The .proto text served by default (Confluent serves its printed form too)."""
        from .protobuf_print import print_proto
        return print_proto(self.descriptor)

    def named(self, name: str) -> "ProtobufSchema":
        """The same schema as the file `name` (how a reference's importer knows it)."""
        from google.protobuf import descriptor_pb2
        fd = descriptor_pb2.FileDescriptorProto()
        fd.CopyFrom(self.descriptor)
        fd.name = name
        return ProtobufSchema(fd, self.canonical, self.dependencies)


def _sorted(node):
    if isinstance(node, dict):
        return {k: _sorted(node[k]) for k in sorted(node)}
    if isinstance(node, list):
        return [_sorted(v) for v in node]
    return node


def _parse_json(text: str, references) -> JsonSchema:
    import jsonschema
    try:
        node = json.loads(text)
    except ValueError as e:
        raise InvalidSchema(f"schema is not JSON: {e}") from None
    if not isinstance(node, (dict, bool)):
        raise InvalidSchema("a JSON Schema is an object or a boolean")
    try:
        jsonschema.validators.validator_for(node, default=jsonschema.Draft7Validator) \
            .check_schema(node)
    except jsonschema.SchemaError as e:
        raise InvalidSchema(f"{e.message} at {'/'.join(map(str, e.absolute_path)) or '/'}") \
            from None
    return JsonSchema(node, json_text.dumps(node), json_text.dumps(_sorted(node)))


def _descriptor_from_base64(text: str):
    from google.protobuf import descriptor_pb2
    try:
        raw = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None
    try:
        return descriptor_pb2.FileDescriptorProto.FromString(raw)
    except Exception as e:   # protobuf's DecodeError
        raise InvalidSchema(f"not a serialized FileDescriptorProto: {e}") from None


def _parse_protobuf(text: str, references) -> ProtobufSchema:
    from google.protobuf import descriptor_pool
    from .protobuf_text import ProtoSyntaxError, known_types, parse_proto
    fd = _descriptor_from_base64(text)
    canonical = text.strip()
    if fd is None:
        imports = [ref.descriptor for ref in references] + _well_known_files(text)
        try:
            fd = parse_proto(text, known_types(imports))
        except ProtoSyntaxError as e:
            raise InvalidSchema(f"not .proto text nor a base64 FileDescriptorProto: {e}") \
                from None
    pool = descriptor_pool.DescriptorPool()
    _add_well_known(pool, fd)
    try:
        for ref in references:
            pool.Add(ref.descriptor)
        pool.Add(fd)
        pool.FindFileByName(fd.name)
    except Exception as e:
        raise InvalidSchema(f"Protobuf descriptor {fd.name!r} does not build: {e}") from None
    deps = []
    for ref in references:
        deps += [ref.descriptor, *ref.dependencies]
    return ProtobufSchema(fd, canonical, deps)


def _well_known_files(text: str) -> list:
    """Descriptors of the google/protobuf/*.proto files `text` imports."""
    import re
    from google.protobuf import descriptor_pb2, descriptor_pool
    out = []
    for dep in re.findall(r'import\s+(?:public\s+|weak\s+)?"(google/protobuf/[^"]+)"', text):
        _import_well_known(dep)
        try:
            f = descriptor_pool.Default().FindFileByName(dep)
        except KeyError:
            continue
        proto = descriptor_pb2.FileDescriptorProto()
        f.CopyToProto(proto)
        out.append(proto)
    return out


def _add_well_known(pool, fd) -> None:
    from google.protobuf import descriptor_pb2, descriptor_pool
    default = descriptor_pool.Default()
    for dep in fd.dependency:
        if dep.startswith("google/protobuf/"):
            _import_well_known(dep)
            try:
                f = default.FindFileByName(dep)
            except KeyError:
                continue
            proto = descriptor_pb2.FileDescriptorProto()
            f.CopyToProto(proto)
            try:
                pool.Add(proto)
            except Exception:
                pass


def _import_well_known(dep: str) -> None:
    import importlib
    module = dep[:-len(".proto")].replace("/", ".") + "_pb2"
    try:
        importlib.import_module(module)
    except ImportError:
        pass


_PARSERS = {"AVRO": avro.parse_avro, "JSON": _parse_json, "PROTOBUF": _parse_protobuf}


def parse_schema(schema_type: str, text: str, references=()):
    """references: parsed schemas, or (reference name, parsed schema) pairs."""
    parser = _PARSERS.get(schema_type)
    if parser is None:
        raise InvalidSchema(f"unknown schemaType {schema_type!r}: one of {', '.join(TYPES)}")
    if not isinstance(text, str):
        raise InvalidSchema("the schema must be a string")
    refs = []
    for r in references:
        name, parsed = r if isinstance(r, tuple) else (None, r)
        if parsed.schema_type != schema_type:
            continue
        if schema_type == "PROTOBUF" and name:
            parsed = parsed.named(name)      # imported under the reference's name
        refs.append(parsed)
    try:
        return parser(text, refs)
    except avro.AvroSchemaError as e:
        raise InvalidSchema(str(e)) from None
    except RecursionError:
        # hostile input: nesting past what the parsers recurse through
        raise InvalidSchema("the schema is nested too deeply") from None


def check(reader, writer, reader_label="new", writer_label="old"):
    """Incompatibilities (objects with `.message()`) of reader against writer's data."""
    if reader.schema_type != writer.schema_type:
        return [_TypeChange(reader.schema_type, writer.schema_type)]
    if reader.schema_type == "AVRO":
        return avro_compat.check_avro(reader, writer, reader_label, writer_label)
    if reader.schema_type == "JSON":
        from .json_compat import check_json
        return check_json(reader, writer, reader_label, writer_label)
    from .protobuf_compat import check_protobuf
    return check_protobuf(reader, writer, reader_label, writer_label)


class _TypeChange:
    def __init__(self, new, old):
        self.new, self.old = new, old

    def message(self) -> str:
        return (f"{{errorType:'SCHEMA_TYPE_CHANGED', description:'The schema type changed "
                f"from {self.old} to {self.new}', additionalInfo:''}}")
