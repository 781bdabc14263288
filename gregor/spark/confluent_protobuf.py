"""valueFormat=protobuf: Confluent-framed Protobuf values as Spark structs, typed by the
subject's latest descriptor (its first message, or valueMessage / keyMessage by full name):
scalars as their Spark types (unsigned 64-bit as long), enums as their names, repeated as
arrays, maps as maps, messages as structs. Messages are parsed one record at a time."""
from __future__ import annotations

import pyarrow as pa
from google.protobuf.descriptor import FieldDescriptor as FD

from gregor.serde.avro_arrow import RecordDecodeError, _binary_parts
from gregor.serde.errors import SerializationError
from gregor.serde.protobuf import ProtobufDeserializer

_SCALARS = {FD.TYPE_DOUBLE: pa.float64(), FD.TYPE_FLOAT: pa.float32(),
            FD.TYPE_INT64: pa.int64(), FD.TYPE_UINT64: pa.int64(), FD.TYPE_INT32: pa.int32(),
            FD.TYPE_FIXED64: pa.int64(), FD.TYPE_FIXED32: pa.int64(), FD.TYPE_BOOL: pa.bool_(),
            FD.TYPE_STRING: pa.string(), FD.TYPE_BYTES: pa.binary(),
            FD.TYPE_UINT32: pa.int64(), FD.TYPE_ENUM: pa.string(),
            FD.TYPE_SFIXED32: pa.int32(), FD.TYPE_SFIXED64: pa.int64(),
            FD.TYPE_SINT32: pa.int32(), FD.TYPE_SINT64: pa.int64()}


def _repeated(f) -> bool:
    # protobuf 7 dropped FieldDescriptor.label for is_repeated
    rep = getattr(f, "is_repeated", None)
    return rep if rep is not None else f.label == FD.LABEL_REPEATED


def _is_map(f) -> bool:
    return (f.type == FD.TYPE_MESSAGE and f.message_type.GetOptions().map_entry)


def _field_type(f, depth):
    if _is_map(f):
        k, v = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
        return pa.map_(_single(k, depth), _single(v, depth))
    t = _single(f, depth)
    return pa.list_(t) if _repeated(f) else t


def _single(f, depth):
    if f.type in (FD.TYPE_MESSAGE, FD.TYPE_GROUP):
        return proto_arrow_type(f.message_type, depth + 1)
    return _SCALARS[f.type]


def proto_arrow_type(desc, depth: int = 0) -> pa.DataType:
    if depth > 32:
        raise SerializationError(f"Protobuf message {desc.full_name} nests itself: recursive "
                                 "messages have no Spark type")
    return pa.struct([pa.field(f.name, _field_type(f, depth)) for f in desc.fields])


def to_py(msg):
    out = {}
    for f in msg.DESCRIPTOR.fields:
        v = getattr(msg, f.name)
        if _is_map(f):
            vf = f.message_type.fields_by_name["value"]
            out[f.name] = [(k, _value(vf, x)) for k, x in v.items()]
        elif _repeated(f):
            out[f.name] = [_value(f, x) for x in v]
        elif f.type == FD.TYPE_MESSAGE:
            out[f.name] = to_py(v) if msg.HasField(f.name) else None
        else:
            out[f.name] = _value(f, v)
    return out


def _value(f, v):
    if f.type == FD.TYPE_MESSAGE:
        return to_py(v)
    if f.type == FD.TYPE_ENUM:
        e = f.enum_type.values_by_number.get(v)
        return e.name if e is not None else str(v)
    return v


def message_class(f, registry):
    """The message class the column is typed by: from the latest schema's descriptor."""
    from gregor.schema_registry import Schema
    de = ProtobufDeserializer(schema_registry_client=registry)
    fd = de._add_file(f"{f.subject}.proto", Schema(f.schema_str, "PROTOBUF", ()))
    if f.message:
        desc = de._pool.FindMessageTypeByName(f.message)
    else:
        desc = list(fd.message_types_by_name.values())[0]
    from google.protobuf import message_factory
    return message_factory.GetMessageClass(desc)


class ProtobufColumnDecoder:
    def __init__(self, f, registry, permissive: bool):
        self.cls = message_class(f, registry)
        self.type = proto_arrow_type(self.cls.DESCRIPTOR)
        self.de = ProtobufDeserializer(self.cls)
        self.permissive = permissive

    def decode(self, values):
        n, offsets, data, nulls = _binary_parts(values)
        buf = data.tobytes()
        rows = []
        for i in range(n):
            if nulls is not None and nulls[i]:
                rows.append(None)
                continue
            try:
                rows.append(to_py(self.de.deserialize("", buf[offsets[i]:offsets[i + 1]])))
            except (ValueError, TypeError) as ex:
                if not self.permissive:
                    raise RecordDecodeError(i, str(ex)) from None
                rows.append(None)
        return pa.array(rows, self.type), None
