"""A FileDescriptorProto printed as .proto text: the form the registry serves a Protobuf
schema in unless `format=serialized` asks for the base64 descriptor.

Syntax, package, imports (public/weak), file options, messages with their nested messages
and enums, maps (the synthetic *Entry type folded back into `map<K, V>`), oneofs, proto3
`optional` (its synthetic oneof left out), proto2 labels and defaults, field options
(packed, deprecated, ...), enums with their options, services. Type names are printed
fully qualified with a leading dot, which resolves to the same type wherever it is read.
"""
from __future__ import annotations

from google.protobuf import descriptor_pb2

F = descriptor_pb2.FieldDescriptorProto

_SCALARS = {
    F.TYPE_DOUBLE: "double", F.TYPE_FLOAT: "float", F.TYPE_INT64: "int64",
    F.TYPE_UINT64: "uint64", F.TYPE_INT32: "int32", F.TYPE_FIXED64: "fixed64",
    F.TYPE_FIXED32: "fixed32", F.TYPE_BOOL: "bool", F.TYPE_STRING: "string",
    F.TYPE_BYTES: "bytes", F.TYPE_UINT32: "uint32", F.TYPE_SFIXED32: "sfixed32",
    F.TYPE_SFIXED64: "sfixed64", F.TYPE_SINT32: "sint32", F.TYPE_SINT64: "sint64",
}


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _options(opts) -> list[str]:
    """`name = value` for every option set in an *Options message (known fields only)."""
    out = []
    for fdesc, value in opts.ListFields():
        if getattr(fdesc, "is_repeated", False) or fdesc.type == fdesc.TYPE_MESSAGE:
            continue    # uninterpreted / nested options have no simple text form here
        if fdesc.type == fdesc.TYPE_STRING:
            text = _quote(value)
        elif fdesc.type == fdesc.TYPE_BOOL:
            text = "true" if value else "false"
        elif fdesc.type == fdesc.TYPE_ENUM:
            text = fdesc.enum_type.values_by_number[value].name
        else:
            text = str(value)
        out.append(f"{fdesc.name} = {text}")
    return out


def _type(field) -> str:
    return _SCALARS.get(field.type) or field.type_name


class _Printer:
    def __init__(self, fd):
        self.fd = fd
        self.lines: list[str] = []
        self._scopes: dict = {}          # id(nested message) -> its full name

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text if text else "")

    def file(self) -> str:
        fd = self.fd
        self.emit(0, f"syntax = {_quote(fd.syntax or 'proto2')};")
        if fd.package:
            self.emit(0, f"package {fd.package};")
        if fd.dependency:
            self.emit(0, "")
            for i, dep in enumerate(fd.dependency):
                kind = "public " if i in fd.public_dependency else \
                    "weak " if i in fd.weak_dependency else ""
                self.emit(0, f"import {kind}{_quote(dep)};")
        opts = _options(fd.options)
        if opts:
            self.emit(0, "")
            for o in opts:
                self.emit(0, f"option {o};")
        for m in fd.message_type:
            self.emit(0, "")
            self.message(m, 0)
        for e in fd.enum_type:
            self.emit(0, "")
            self.enum(e, 0)
        for s in fd.service:
            self.emit(0, "")
            self.service(s)
        return "\n".join(self.lines) + "\n"

    def message(self, m, depth: int) -> None:
        self.emit(depth, f"message {m.name} {{")
        for o in _options(m.options):
            self.emit(depth + 1, f"option {o};")
        entries = {f".{self._scope(m)}.{n.name}": n for n in m.nested_type
                   if n.options.map_entry}
        done_oneofs = set()
        for f in m.field:
            if f.HasField("oneof_index") and not f.proto3_optional:
                if f.oneof_index in done_oneofs:
                    continue
                done_oneofs.add(f.oneof_index)
                self.emit(depth + 1, f"oneof {m.oneof_decl[f.oneof_index].name} {{")
                for g in m.field:
                    if g.HasField("oneof_index") and g.oneof_index == f.oneof_index \
                            and not g.proto3_optional:
                        self.field(g, depth + 2, entries, in_oneof=True)
                self.emit(depth + 1, "}")
            else:
                self.field(f, depth + 1, entries)
        for r in m.reserved_range:
            end = "max" if r.end >= 536870912 else str(r.end - 1)
            self.emit(depth + 1, f"reserved {r.start}" +
                      (f" to {end};" if r.end - 1 != r.start else ";"))
        if m.reserved_name:
            self.emit(depth + 1, "reserved " + ", ".join(_quote(n) for n in m.reserved_name)
                      + ";")
        for n in m.nested_type:
            if not n.options.map_entry:
                self._scopes[id(n)] = f"{self._scope(m)}.{n.name}"
                self.message(n, depth + 1)
        for e in m.enum_type:
            self.enum(e, depth + 1)
        self.emit(depth, "}")

    def _scope(self, m) -> str:
        """The full name of message `m` (top-level ones are package-qualified)."""
        if id(m) in self._scopes:
            return self._scopes[id(m)]
        return f"{self.fd.package}.{m.name}" if self.fd.package else m.name

    def field(self, f, depth: int, entries: dict, in_oneof: bool = False) -> None:
        entry = entries.get(f.type_name) if f.type == F.TYPE_MESSAGE else None
        if entry is not None:
            key, value = entry.field[0], entry.field[1]
            head = f"map<{_type(key)}, {_type(value)}>"
        else:
            label = ""
            if not in_oneof:
                if f.label == F.LABEL_REPEATED:
                    label = "repeated "
                elif f.proto3_optional or (self.fd.syntax in ("", "proto2")
                                           and f.label == F.LABEL_OPTIONAL):
                    label = "optional "
                elif f.label == F.LABEL_REQUIRED:
                    label = "required "
            head = f"{label}{_type(f)}"
        opts = []
        if f.HasField("default_value"):
            v = f.default_value
            opts.append("default = " + (_quote(v) if f.type in (F.TYPE_STRING, F.TYPE_BYTES)
                                         else v))
        opts += _options(f.options)
        tail = f" [{', '.join(opts)}]" if opts else ""
        self.emit(depth, f"{head} {f.name} = {f.number}{tail};")

    def enum(self, e, depth: int) -> None:
        self.emit(depth, f"enum {e.name} {{")
        for o in _options(e.options):
            self.emit(depth + 1, f"option {o};")
        for v in e.value:
            opts = _options(v.options)
            tail = f" [{', '.join(opts)}]" if opts else ""
            self.emit(depth + 1, f"{v.name} = {v.number}{tail};")
        self.emit(depth, "}")

    def service(self, s) -> None:
        self.emit(0, f"service {s.name} {{")
        for m in s.method:
            cin = "stream " if m.client_streaming else ""
            sout = "stream " if m.server_streaming else ""
            self.emit(1, f"rpc {m.name} ({cin}{m.input_type}) returns "
                         f"({sout}{m.output_type});")
        self.emit(0, "}")


def print_proto(fd: descriptor_pb2.FileDescriptorProto) -> str:
    """`fd` as .proto source text."""
    return _Printer(fd).file()
