"""Protobuf compatibility: can `reader` parse what `writer` serialized?

Compared on the FileDescriptorProtos, message by name within its package and field by
number, with Confluent's difference names and its verdicts (Confluent's protobuf diff
examples). Incompatible (reported):
- MESSAGE_REMOVED (a writer message the reader lacks; map entry types are not messages);
- FIELD_KIND_CHANGED (scalar / enum <-> message, map <-> not map), FIELD_SCALAR_KIND_CHANGED
  (a scalar outside its wire-compatible group, a map's key or value included),
  FIELD_NAMED_TYPE_CHANGED (another message type, by name within its package);
- FIELD_NUMERIC_LABEL_CHANGED (a number or enum field turned repeated or back);
- REQUIRED_FIELD_ADDED / REQUIRED_FIELD_REMOVED (proto2 `required`);
- ONEOF_FIELD_REMOVED (a field removed from its oneof, or moved out of it),
  MULTIPLE_FIELDS_MOVED_TO_ONEOF (several fields moved into one new oneof),
  FIELD_MOVED_TO_EXISTING_ONEOF.
Accepted, as Confluent accepts them: PACKAGE_CHANGED, added or removed fields, messages,
enums and enum constants, renamed fields and constants, moved messages, new oneofs, one
field moved into a new oneof, label changes of message / string / bytes fields, and the
wire-compatible scalar changes: int32 / uint32 / int64 / uint64 / bool, sint32 / sint64,
fixed32 / sfixed32, fixed64 / sfixed64, string / bytes, and enum <-> int32 / uint32 /
int64 / uint64. Messages of referenced files (the schema's `dependencies`) are compared
by the same rules wherever a field of both versions uses them, their paths relative to
their own package. Not compared: options, services, extensions, and a referenced file's
messages no field uses.
"""
from __future__ import annotations

from google.protobuf.descriptor_pb2 import FieldDescriptorProto as F

_MESSAGES = {F.TYPE_MESSAGE, F.TYPE_GROUP}
# Scalars that read each other's encoding (protobuf's "Updating a message type" rules).
_GROUP = {}
for _n, _kinds in enumerate([
        (F.TYPE_INT32, F.TYPE_UINT32, F.TYPE_INT64, F.TYPE_UINT64, F.TYPE_BOOL),
        (F.TYPE_SINT32, F.TYPE_SINT64), (F.TYPE_FIXED32, F.TYPE_SFIXED32),
        (F.TYPE_FIXED64, F.TYPE_SFIXED64), (F.TYPE_STRING, F.TYPE_BYTES),
        (F.TYPE_DOUBLE,), (F.TYPE_FLOAT,), (F.TYPE_ENUM,)]):
    for _k in _kinds:
        _GROUP[_k] = _n
_ENUM_INTS = {F.TYPE_INT32, F.TYPE_UINT32, F.TYPE_INT64, F.TYPE_UINT64}
_LEN_DELIMITED = {F.TYPE_STRING, F.TYPE_BYTES} | _MESSAGES


class Difference:
    def __init__(self, kind: str, path: str):
        self.error_type, self.path = kind, path

    def message(self) -> str:
        return (f"Found incompatible change: Difference{{fullPath='{self.path}', "
                f"type={self.error_type}}}")


def _messages(fd):
    """{name within the package: message}, full names -> entries for map detection."""
    out, by_full = {}, {}

    def walk(msgs, prefix):
        for m in msgs:
            rel = f"{prefix}.{m.name}" if prefix else m.name
            by_full[f"{fd.package}.{rel}" if fd.package else rel] = m
            if not m.options.map_entry:
                out[rel] = m
            walk(m.nested_type, rel)
    walk(fd.message_type, "")
    return out, by_full


def _relative(type_name: str, package: str) -> str:
    name = type_name.lstrip(".")
    return name[len(package) + 1:] if package and name.startswith(package + ".") else name


def _scalar_compatible(old: int, new: int) -> bool:
    if old == new or _GROUP.get(old) == _GROUP.get(new):
        return True
    return (old == F.TYPE_ENUM and new in _ENUM_INTS) or (new == F.TYPE_ENUM and old in _ENUM_INTS)


def _map_entry(by_full, field):
    if field.type != F.TYPE_MESSAGE:
        return None
    target = by_full.get(field.type_name.lstrip("."))
    return target if target is not None and target.options.map_entry else None


def _oneof(m, field):
    return m.oneof_decl[field.oneof_index].name if field.HasField("oneof_index") and \
        not field.proto3_optional else None


def _dependency_messages(files) -> dict:
    """{full name: (message, its file's package)} over the referenced files."""
    out = {}
    for fd in files:
        for full, m in _messages(fd)[1].items():
            out.setdefault(full, (m, fd.package))
    return out


def check_protobuf(reader, writer, reader_label="new", writer_label="old") -> list:
    original, update = writer.descriptor, reader.descriptor
    out: list = []
    (old_msgs, old_full), (new_msgs, new_full) = _messages(original), _messages(update)
    old_deps = _dependency_messages(getattr(writer, "dependencies", ()))
    new_deps = _dependency_messages(getattr(reader, "dependencies", ()))
    # map entries and nested types may live in a referenced file too
    old_all = {**{k: m for k, (m, _) in old_deps.items()}, **old_full}
    new_all = {**{k: m for k, (m, _) in new_deps.items()}, **new_full}
    used: list = []          # (old, new) full names of referenced messages fields use
    ctx = (original.package, update.package, old_all, new_all)
    for rel, om in old_msgs.items():
        nm = new_msgs.get(rel)
        path = f"#/{rel.replace('.', '/')}"
        if nm is None:
            out.append(Difference("MESSAGE_REMOVED", path))
            continue
        _compare_message(om, nm, path, ctx, out, used)
    # A referenced file's message is compared where both versions' fields use it: its
    # changes reach this schema's data as a change of its own message would.
    done = set()
    while used:
        pair = used.pop(0)
        if pair in done or pair[0] in old_full or pair[1] in new_full:
            continue
        done.add(pair)
        (om, o_pkg), (nm, n_pkg) = old_deps.get(pair[0], (None, "")), \
            new_deps.get(pair[1], (None, ""))
        if om is None or nm is None or om.options.map_entry:
            continue
        path = f"#/{_relative(pair[0], o_pkg).replace('.', '/')}"
        _compare_message(om, nm, path, (o_pkg, n_pkg, old_all, new_all), out, used)
    return out


def _compare_message(om, nm, path, ctx, out, used) -> None:
    new_fields = {f.number: f for f in nm.field}
    moved_into: dict[str, int] = {}
    for of in om.field:
        nf = new_fields.get(of.number)
        fpath = f"{path}/{of.number}"
        o_one = _oneof(om, of)
        if nf is None:
            if of.label == F.LABEL_REQUIRED:
                out.append(Difference("REQUIRED_FIELD_REMOVED", fpath))
            if o_one is not None:
                out.append(Difference("ONEOF_FIELD_REMOVED", f"{path}/{o_one}/{of.number}"))
            continue
        kind = _field_change(of, nf, ctx)
        if kind:
            out.append(Difference(kind, fpath))
        else:
            _note_used(of, nf, ctx, used)
        if nf.label == F.LABEL_REQUIRED and of.label != F.LABEL_REQUIRED:
            out.append(Difference("REQUIRED_FIELD_ADDED", fpath))
        n_one = _oneof(nm, nf)
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


def _note_used(of, nf, ctx, used) -> None:
    """Queue the message types an unchanged field (a map's value included) refers to."""
    _, _, old_all, new_all = ctx
    o_entry, n_entry = _map_entry(old_all, of), _map_entry(new_all, nf)
    if o_entry is not None and n_entry is not None:
        for ok, nk in zip(o_entry.field, n_entry.field):
            _note_used(ok, nk, ctx, used)
    elif of.type in _MESSAGES and nf.type in _MESSAGES:
        used.append((of.type_name.lstrip("."), nf.type_name.lstrip(".")))


def _field_change(of, nf, ctx):
    """The difference name for field `of` becoming `nf` (same number), or None."""
    old_pkg, new_pkg, old_full, new_full = ctx
    o_entry, n_entry = _map_entry(old_full, of), _map_entry(new_full, nf)
    if (o_entry is None) != (n_entry is None):
        return "FIELD_KIND_CHANGED"
    if o_entry is not None:              # map<K, V>: the key and value decide
        for ok, nk in zip(o_entry.field, n_entry.field):
            kind = _field_change(ok, nk, ctx)
            if kind:
                return kind
        return None
    o_msg, n_msg = of.type in _MESSAGES, nf.type in _MESSAGES
    if o_msg != n_msg:
        return "FIELD_KIND_CHANGED"
    if o_msg:
        if _relative(of.type_name, old_pkg) != _relative(nf.type_name, new_pkg):
            return "FIELD_NAMED_TYPE_CHANGED"
    elif not _scalar_compatible(of.type, nf.type):
        return "FIELD_SCALAR_KIND_CHANGED"
    if (of.label == F.LABEL_REPEATED) != (nf.label == F.LABEL_REPEATED) and \
            of.type not in _LEN_DELIMITED and nf.type not in _LEN_DELIMITED:
        return "FIELD_NUMERIC_LABEL_CHANGED"
    return None
