"""JSON text as Jackson writes it (compact, keys in the given order, UTF-8 unescaped).

Two things depend on these exact bytes: the keys of `_schemas` (compaction keeps the last
record per key *bytes*, so a key written differently from Confluent's would survive beside its
twin) and the schema text stored as a canonical form (the same schema must give the same text
to get the same id). Jackson escapes only `"`, `\\` and control characters, the latter as
\\b \\f \\n \\r \\t or \\u00XX with upper-case hex; Python's json module writes lower-case
hex, hence this writer.
"""
from __future__ import annotations

import json
import math

_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
          "\t": "\\t"}


def _escape_char(c: str) -> str:
    return _SHORT.get(c) or f"\\u{ord(c):04X}"


_NEEDS = frozenset(_SHORT) | frozenset(chr(i) for i in range(0x20))


def quote(s: str) -> str:
    if not any(c in _NEEDS for c in s):
        return f'"{s}"'
    return '"' + "".join(_escape_char(c) if c in _NEEDS else c for c in s) + '"'


def _number(x) -> str:
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ValueError(f"{x!r} is not a JSON number")
        return json.dumps(x)
    return str(int(x))


def dumps(value) -> str:
    """`value` (dict, list, str, int, float, bool, None) as compact JSON text."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, (int, float)):
        return _number(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{quote(str(k))}:{dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    raise TypeError(f"{type(value).__name__} is not JSON")
