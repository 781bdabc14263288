"""Golden bytes against an independent encoder: kafka-python's hand-written protocol classes.

For every (API, version, direction) that both gregor and kafka-python's per-version classes
define, random messages are encoded both ways and must give identical bytes; kafka-python's
bytes must decode with gregor's decoder to the same message. kafka-python's classes are
positional, so the message is handed to them field by field in wire order, which also checks
that both sides agree on the field count of every struct.
"""
from __future__ import annotations

import importlib
import pkgutil
import random
import uuid

import pytest

from gregor.protocol import messages
from gregor.protocol.schema import F

from tests.protocol.schema_data import default_value, expected, random_message

kp_old = pytest.importorskip("kafka.protocol.old", reason="kafka-python 3 (test dependency) "
                             "provides the independent encoder")
kp_types = importlib.import_module("kafka.protocol.old.types")


def _their_classes() -> dict[tuple[int, int, str], type]:
    found = {}
    for info in pkgutil.iter_modules(kp_old.__path__):
        mod = importlib.import_module(f"{kp_old.__name__}.{info.name}")
        for name, cls in vars(mod).items():
            if not (isinstance(cls, type) and hasattr(cls, "SCHEMA")):
                continue
            key, version = getattr(cls, "API_KEY", None), getattr(cls, "API_VERSION", None)
            if not (isinstance(key, int) and isinstance(version, int)):
                continue
            which = "request" if "Request" in name else "response"
            found.setdefault((key, version, which), cls)
    return found


_THEIRS = _their_classes()
# kafka-python's old DescribeAcls v2 classes reuse the v1 (non-flexible) schema, while Kafka's
# DescribeAcls*.json make v2 flexible (test_schema_vs_kafka_json holds ours to Kafka's files).
# Their DescribeLogDirs v0 request declares each topic's partitions as one int32, where Kafka's
# DescribeLogDirsRequest.json has an array of int32.
_THEIRS_WRONG = {(29, 2, "request"), (29, 2, "response"), (35, 0, "request")}
_PAIRS = sorted(k for k in _THEIRS if k[0] in messages.APIS
                and messages.APIS[k[0]].supports(k[1]) and k not in _THEIRS_WRONG)


def _present(f: F, v: int) -> bool:
    return f.versions is not None and f.versions[0] <= v <= f.versions[1]


def _tagged(f: F, v: int, flexible: bool) -> bool:
    return flexible and f.tagged_versions is not None and \
        f.tagged_versions[0] <= v <= f.tagged_versions[1]


def _untag(fields: list[F], v: int, flexible: bool, obj: dict) -> dict:
    """kafka-python's classes carry tagged fields as raw bytes; give them defaults here
    (the tag encoding itself is covered by the round-trip and primitive tests)."""
    out = {}
    for f in fields:
        if f.name not in obj:
            continue
        x = obj[f.name]
        if _tagged(f, v, flexible):
            x = default_value(f, v)
        elif x is not None and f.type == "struct":
            x = _untag(f.fields, v, flexible, x)
        elif x is not None and f.type == "[]":
            x = [_untag(f.fields, v, flexible, e) for e in x]
        out[f.name] = x
    return out


def _to_theirs(their_type, f: F | None, value, v: int, flexible: bool):
    if isinstance(their_type, kp_types.Schema):
        return _struct_to_theirs(their_type, f.fields, value, v, flexible)
    if isinstance(their_type, kp_types.Array):  # includes CompactArray
        if value is None:
            return None
        if f is not None and f.type == "[]" and not isinstance(their_type.array_of,
                                                               kp_types.Schema):
            # their array of primitives is our array of one-field structs (same wire form)
            (only,) = [g for g in f.fields if _present(g, v) and not _tagged(g, v, flexible)]
            return [_to_theirs(their_type.array_of, only, e[only.name], v, flexible)
                    for e in value]
        elem_field = f if f.type == "[]" else None
        return [_to_theirs(their_type.array_of, elem_field, e, v, flexible) for e in value]
    if their_type is kp_types.UUID:
        return uuid.UUID(bytes=value)
    if their_type is kp_types.BitField:
        return None if value == -(1 << 31) else {i for i in range(32) if value >> i & 1}
    return value


def _struct_to_theirs(schema, fields: list[F], obj: dict, v: int, flexible: bool) -> tuple:
    ours = [f for f in fields if _present(f, v) and not _tagged(f, v, flexible)]
    pending = iter(ours)
    values = _consume(schema, pending, obj, v, flexible)
    left = [f.name for f in pending]
    assert not left, f"kafka-python's {schema.names} has no room for our {left}"
    return values


def _consume(schema, pending, obj: dict, v: int, flexible: bool) -> tuple:
    """Their fields in order, taking ours from `pending`. A nested struct on their side that is
    a run of plain fields on ours (same wire form) takes as many of ours as it has fields."""
    values = []
    for name, t in zip(schema.names, schema.fields):
        if t is kp_types.TaggedFields:
            values.append({})
            continue
        f = next(pending, None)
        assert f is not None, f"kafka-python's field {name} has no counterpart in ours"
        if isinstance(t, kp_types.Schema) and f.type != "struct":
            values.append(_consume(t, _chain(f, pending), obj, v, flexible))
            continue
        values.append(_to_theirs(t, f, obj[f.name], v, flexible))
    return tuple(values)


def _chain(first, rest):
    yield first
    yield from rest


@pytest.mark.parametrize("pair", _PAIRS, ids=[f"{messages.APIS[k].name}-v{v}-{w}"
                                              for k, v, w in _PAIRS])
def test_same_bytes_as_kafka_python(pair):
    key, v, which = pair
    api = messages.APIS[key]
    fields = api.request if which == "request" else api.response
    codec = api.request_codec(v) if which == "request" else api.response_codec(v)
    cls = _THEIRS[pair]
    rng = random.Random(key * 1000 + v)
    for _ in range(8):
        msg = _untag(fields, v, codec.flexible, random_message(fields, v, rng))
        theirs = cls(*_struct_to_theirs(cls.SCHEMA, fields, msg, v, codec.flexible)).encode()
        assert codec.encode(msg) == theirs
        assert codec.decode(theirs) == expected(fields, v, msg)


def test_enough_pairs_are_compared():
    assert len(_PAIRS) >= 200
    assert len({k for k, _, _ in _PAIRS}) >= 25
