"""`.proto` source text to a FileDescriptorProto (the protobuf package has no parser).

A recursive-descent parser for what schema files hold: `syntax`, `package`, `import`
(`public` / `weak`), `option` (skipped), `message` (fields with labels, `map<K,V>`, `oneof`,
nested messages and enums, `reserved`, `extensions` skipped), `enum`, `service` (skipped),
comments. Type names are resolved as protoc resolves them, innermost scope outwards, against
this file's types and those of its imports (`known`: full name -> "message" | "enum").
Raises ProtoSyntaxError with the line.
"""
from __future__ import annotations

import re

from google.protobuf import descriptor_pb2

F = descriptor_pb2.FieldDescriptorProto
SCALARS = {"double": F.TYPE_DOUBLE, "float": F.TYPE_FLOAT, "int64": F.TYPE_INT64,
           "uint64": F.TYPE_UINT64, "int32": F.TYPE_INT32, "fixed64": F.TYPE_FIXED64,
           "fixed32": F.TYPE_FIXED32, "bool": F.TYPE_BOOL, "string": F.TYPE_STRING,
           "bytes": F.TYPE_BYTES, "uint32": F.TYPE_UINT32, "sfixed32": F.TYPE_SFIXED32,
           "sfixed64": F.TYPE_SFIXED64, "sint32": F.TYPE_SINT32, "sint64": F.TYPE_SINT64}
LABELS = {"optional": F.LABEL_OPTIONAL, "required": F.LABEL_REQUIRED,
          "repeated": F.LABEL_REPEATED}
_TOKEN = re.compile(r'\s+|//[^\n]*|/\*.*?\*/|(?P<tok>"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\''
                    r'|[A-Za-z_][A-Za-z0-9_.]*|\.[A-Za-z_][A-Za-z0-9_.]*|-?[0-9][0-9A-Za-z.+-]*'
                    r'|[{}\[\]()<>;=,:])', re.S)


class ProtoSyntaxError(ValueError):
    pass


def _tokens(text: str):
    pos, line, out = 0, 1, []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ProtoSyntaxError(f"line {line}: unexpected {text[pos:pos + 20]!r}")
        if m.group("tok") is not None:
            out.append((m.group("tok"), line))
        line += text.count("\n", pos, m.end())
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str):
        self.toks = _tokens(text)
        self.i = 0
        self.fd = descriptor_pb2.FileDescriptorProto()
        self.pending: list[tuple] = []     # (field, scope, type name, line) to resolve

    def peek(self):
        return self.toks[self.i][0] if self.i < len(self.toks) else None

    def line(self):
        return self.toks[min(self.i, len(self.toks) - 1)][1] if self.toks else 1

    def take(self, expected: str | None = None) -> str:
        if self.i >= len(self.toks):
            raise ProtoSyntaxError(f"line {self.line()}: unexpected end of text"
                                   + (f", expected {expected!r}" if expected else ""))
        tok = self.toks[self.i][0]
        if expected is not None and tok != expected:
            raise ProtoSyntaxError(f"line {self.line()}: expected {expected!r}, got {tok!r}")
        self.i += 1
        return tok

    def skip_statement(self) -> None:
        depth = 0
        while True:
            tok = self.take()
            if tok == "{":
                depth += 1
            elif tok == "}":
                depth -= 1
                if depth == 0:
                    return
            elif tok == ";" and depth == 0:
                return

    def skip_options(self) -> None:
        if self.peek() == "[":
            depth = 0
            while True:
                tok = self.take()
                depth += tok == "["
                depth -= tok == "]"
                if depth == 0:
                    return

    def file(self):
        fd = self.fd
        fd.syntax = "proto2"
        while self.peek() is not None:
            tok = self.take()
            if tok == "syntax" or tok == "edition":
                self.take("=")
                fd.syntax = self.take().strip("\"'")
                self.take(";")
            elif tok == "package":
                fd.package = self.take()
                self.take(";")
            elif tok == "import":
                kind = self.peek()
                if kind in ("public", "weak"):
                    self.take()
                fd.dependency.append(self.take().strip("\"'"))
                if kind == "public":
                    fd.public_dependency.append(len(fd.dependency) - 1)
                self.take(";")
            elif tok == "message":
                self.message(fd.message_type.add(), fd.package)
            elif tok == "enum":
                self.enum(fd.enum_type.add())
            elif tok in ("option", "service", "extend"):
                self.skip_statement()
            elif tok == ";":
                continue
            else:
                raise ProtoSyntaxError(f"line {self.line()}: unexpected {tok!r}")
        if fd.syntax == "proto2":
            fd.ClearField("syntax")     # protoc leaves it unset for proto2
        return fd

    def enum(self, e) -> None:
        e.name = self.take()
        self.take("{")
        while self.peek() != "}":
            tok = self.take()
            if tok in ("option", "reserved"):
                self.skip_statement()
                continue
            if tok == ";":
                continue
            self.take("=")
            number = int(self.take(), 0)
            self.skip_options()
            self.take(";")
            e.value.add(name=tok, number=number)
        self.take("}")

    def message(self, m, scope: str) -> None:
        m.name = self.take()
        full = f"{scope}.{m.name}" if scope else m.name
        self.take("{")
        self.body(m, full, oneof=None)
        self.take("}")
        # proto3 `optional` fields: synthetic oneofs after every real one, as protoc does
        for f in m.field:
            if f.proto3_optional:
                f.oneof_index = len(m.oneof_decl)
                m.oneof_decl.add(name=f"_{f.name}")

    def body(self, m, full: str, oneof) -> None:
        while self.peek() != "}":
            tok = self.peek()
            if tok == "message":
                self.take()
                self.message(m.nested_type.add(), full)
            elif tok == "enum":
                self.take()
                self.enum(m.enum_type.add())
            elif tok == "oneof":
                self.take()
                index = len(m.oneof_decl)
                m.oneof_decl.add(name=self.take())
                self.take("{")
                self.body(m, full, oneof=index)
                self.take("}")
            elif tok in ("option", "reserved", "extensions", "extend"):
                self.skip_statement()
            elif tok == ";":
                self.take()
            else:
                self.field(m, full, oneof)

    def field(self, m, full: str, oneof) -> None:
        line = self.line()
        label = None
        if self.peek() in LABELS:
            label = self.take()
        type_name = self.take()
        if type_name == "map":
            self.take("<")
            key = self.take()
            self.take(",")
            value = self.take()
            self.take(">")
            name = self.take()
            entry = m.nested_type.add(name="".join(p.capitalize() for p in name.split("_"))
                                      + "Entry")
            entry.options.map_entry = True
            k = entry.field.add(name="key", number=1, label=F.LABEL_OPTIONAL)
            v = entry.field.add(name="value", number=2, label=F.LABEL_OPTIONAL)
            self._type(k, key, full, line)
            self._type(v, value, f"{full}.{entry.name}", line)
            f = m.field.add(name=name, label=F.LABEL_REPEATED,
                            type=F.TYPE_MESSAGE, type_name=f".{full}.{entry.name}")
        else:
            name = self.take()
            proto3 = self.fd.syntax == "proto3"
            f = m.field.add(name=name, label=LABELS.get(label, F.LABEL_OPTIONAL))
            if label == "optional" and proto3 and oneof is None:
                f.proto3_optional = True      # its synthetic oneof comes after the body
            self._type(f, type_name, full, line)
        self.take("=")
        f.number = int(self.take(), 0)
        if oneof is not None:
            f.oneof_index = oneof
        self.skip_options()
        self.take(";")
        f.json_name = re.sub(r"_([a-z])", lambda x: x.group(1).upper(), f.name)

    def _type(self, f, name: str, scope: str, line: int) -> None:
        if name in SCALARS:
            f.type = SCALARS[name]
        else:
            self.pending.append((f, scope, name, line))


def _file_types(fd) -> dict[str, str]:
    out = {}

    def walk(msgs, enums, prefix):
        for e in enums:
            out[f"{prefix}.{e.name}" if prefix else e.name] = "enum"
        for m in msgs:
            full = f"{prefix}.{m.name}" if prefix else m.name
            out[full] = "message"
            walk(m.nested_type, m.enum_type, full)
    walk(fd.message_type, fd.enum_type, fd.package)
    return out


def parse_proto(text: str, known: dict[str, str]) -> descriptor_pb2.FileDescriptorProto:
    """`text` as a FileDescriptorProto named "schema.proto" (set .name after)."""
    p = _Parser(text)
    fd = p.file()
    types = {**known, **_file_types(fd)}
    for f, scope, name, line in p.pending:
        found = None
        if name.startswith("."):
            found = name[1:] if name[1:] in types else None
        else:
            parts = scope.split(".") if scope else []
            for n in range(len(parts), -1, -1):
                candidate = ".".join([*parts[:n], name])
                if candidate in types:
                    found = candidate
                    break
        if found is None:
            raise ProtoSyntaxError(f"line {line}: type {name!r} is not defined here or in an "
                                   "import")
        f.type = F.TYPE_ENUM if types[found] == "enum" else F.TYPE_MESSAGE
        f.type_name = f".{found}"
    fd.name = "schema.proto"
    return fd


def known_types(descriptors) -> dict[str, str]:
    out = {}
    for fd in descriptors:
        out.update(_file_types(fd))
    return out
