"""Protobuf compatibility: can `reader` parse what `writer` serialized?

Compared on the FileDescriptorProtos, message by full name and field by number, with
Confluent's difference names. Incompatible (reported):
- PACKAGE_CHANGED; MESSAGE_REMOVED (a writer message the reader lacks);
- FIELD_KIND_CHANGED (scalar <-> message / enum / map), FIELD_SCALAR_KIND_CHANGED (another
  scalar type), FIELD_NAMED_TYPE_CHANGED (another message or enum type);
- REQUIRED_FIELD_ADDED / REQUIRED_FIELD_REMOVED (proto2 `required`);
- ONEOF_FIELD_REMOVED (a field left its oneof), MULTIPLE_FIELDS_MOVED_TO_ONEOF (several
  fields moved into one oneof), FIELD_MOVED_TO_EXISTING_ONEOF.
Accepted, as Confluent accepts them: added or removed fields, messages, enums and enum
constants, renamed fields, new oneofs. Not compared: options, services, extensions, and
message types from referenced files beyond their names.
"""
from __future__ import annotations

from google.protobuf.descriptor_pb2 import FieldDescriptorProto as F

_NAMED = {F.TYPE_MESSAGE, F.TYPE_ENUM, F.TYPE_GROUP}


class Difference:
    def __init__(self, kind: str, path: str):
        self.error_type, self.path = kind, path

    def message(self) -> str:
        return (f"Found incompatible change: Difference{{fullPath='{self.path}', "
                f"type={self.error_type}}}")


def _messages(fd):
    out = {}

    def walk(msgs, prefix):
        for m in msgs:
            full = f"{prefix}.{m.name}" if prefix else m.name
            out[full] = m
            walk(m.nested_type, full)
    walk(fd.message_type, fd.package)
    return out


def _is_map(msg_by_name, field) -> bool:
    if field.type != F.TYPE_MESSAGE:
        return False
    target = msg_by_name.get(field.type_name.lstrip("."))
    return target is not None and target.options.map_entry


def _oneof(m, field):
    return m.oneof_decl[field.oneof_index].name if field.HasField("oneof_index") and \
        not field.proto3_optional else None


def check_protobuf(reader, writer, reader_label="new", writer_label="old") -> list:
    original, update = writer.descriptor, reader.descriptor
    out = []
    if original.package != update.package:
        out.append(Difference("PACKAGE_CHANGED", "#/package"))
    old_msgs, new_msgs = _messages(original), _messages(update)
    for full, om in old_msgs.items():
        nm = new_msgs.get(full)
        path = f"#/{full}"
        if nm is None:
            out.append(Difference("MESSAGE_REMOVED", path))
            continue
        new_fields = {f.number: f for f in nm.field}
        moved_into: dict[str, int] = {}
        for of in om.field:
            nf = new_fields.get(of.number)
            fpath = f"{path}/{of.number}"
            if nf is None:
                if of.label == F.LABEL_REQUIRED:
                    out.append(Difference("REQUIRED_FIELD_REMOVED", fpath))
                continue
            o_map, n_map = _is_map(old_msgs, of), _is_map(new_msgs, nf)
            o_named, n_named = of.type in _NAMED, nf.type in _NAMED
            if o_map != n_map or o_named != n_named:
                out.append(Difference("FIELD_KIND_CHANGED", fpath))
            elif not o_named and of.type != nf.type:
                out.append(Difference("FIELD_SCALAR_KIND_CHANGED", fpath))
            elif o_named and of.type_name.lstrip(".") != nf.type_name.lstrip("."):
                out.append(Difference("FIELD_NAMED_TYPE_CHANGED", fpath))
            if nf.label == F.LABEL_REQUIRED and of.label != F.LABEL_REQUIRED:
                out.append(Difference("REQUIRED_FIELD_ADDED", fpath))
            o_one, n_one = _oneof(om, of), _oneof(nm, nf)
            if o_one is not None and n_one is None:
                out.append(Difference("ONEOF_FIELD_REMOVED", fpath))
            elif o_one is None and n_one is not None:
                moved_into[n_one] = moved_into.get(n_one, 0) + 1
        old_oneofs = {d.name for d in om.oneof_decl}
        for name, count in moved_into.items():
            if name in old_oneofs:
                out.append(Difference("FIELD_MOVED_TO_EXISTING_ONEOF", f"{path}/{name}"))
            elif count > 1:
                out.append(Difference("MULTIPLE_FIELDS_MOVED_TO_ONEOF", f"{path}/{name}"))
        old_numbers = {f.number for f in om.field}
        for nf in nm.field:
            if nf.number not in old_numbers and nf.label == F.LABEL_REQUIRED:
                out.append(Difference("REQUIRED_FIELD_ADDED", f"{path}/{nf.number}"))
    return out
