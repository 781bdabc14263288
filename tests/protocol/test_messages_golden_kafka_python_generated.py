"""Golden bytes against kafka-python 3's schema-driven message classes (kafka.protocol.*).

These cover the flexible versions (compact types, tagged fields) that kafka-python's older
hand-written classes stop short of. Their engine is independent of ours; random messages are
built on our side, handed to their classes field by field, and both encodings must be equal
byte for byte; their bytes must decode with our decoder to the same message.
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

kp = pytest.importorskip("kafka.protocol.api_message", reason="kafka-python 3 (test dependency) "
                         "provides the independent encoder")
kp_codecs = importlib.import_module("kafka.protocol.schemas.fields.codecs")


def _their_classes() -> dict[tuple[int, str], type]:
    found = {}
    names = [f"kafka.protocol.{pkg}.{info.name}"
             for pkg in ("admin", "consumer", "metadata", "producer")
             for info in pkgutil.iter_modules(importlib.import_module(f"kafka.protocol.{pkg}")
                                              .__path__)]
    for modname in names + ["kafka.protocol.sasl"]:
        for cls in vars(importlib.import_module(modname)).values():
            if (isinstance(cls, type) and issubclass(cls, kp.ApiMessage)
                    and cls is not kp.ApiMessage and getattr(cls, "_json", None)):
                found[(cls.API_KEY, cls.type)] = cls
    return found


_THEIRS = _their_classes()
_PAIRS = []
for (_key, _which), _cls in sorted(_THEIRS.items()):
    if _key in messages.APIS:
        _api = messages.APIS[_key]
        _lo, _hi = _cls.valid_versions
        _PAIRS += [(_key, v, _which) for v in range(max(_lo, _api.valid[0]),
                                                     min(_hi, _api.valid[1]) + 1)]


def _present(f: F, v: int) -> bool:
    return f.versions is not None and f.versions[0] <= v <= f.versions[1]


def _tagged(f: F, v: int, flexible: bool) -> bool:
    return flexible and f.tagged_versions is not None and \
        f.tagged_versions[0] <= v <= f.tagged_versions[1]


def _to_theirs(their_fields, our_fields: list[F], obj: dict, v: int, flexible: bool) -> dict:
    """Keyword arguments for their data class. Fields pair up by position (both follow Kafka's
    field order); their names differ here and there (e.g. authorized_operations)."""
    if isinstance(their_fields, dict):
        their_fields = their_fields.values()
    theirs = [t for t in their_fields if t.for_version_q(v)]
    ours = [f for f in our_fields if _present(f, v)]
    assert len(theirs) == len(ours), ([t.name for t in theirs], [f.name for f in ours])
    kw = {}
    for t, f in zip(theirs, ours):
        x = obj[f.name]
        if _tagged(f, v, flexible) and x == default_value(f, v):
            continue  # Kafka leaves default tagged fields out; so do we (theirs writes any set)
        if x is None:
            kw[t.name] = None
        elif t.is_struct_array():
            kw[t.name] = [t.data_class(version=v, **_to_theirs(t.fields, f.fields, e, v, flexible))
                          for e in x]
        elif t.is_struct():
            kw[t.name] = t.data_class(version=v, **_to_theirs(t.fields, f.fields, x, v, flexible))
        elif getattr(t, "_type", None) is kp_codecs.BitField:
            kw[t.name] = None if x == -(1 << 31) else {i for i in range(32) if x >> i & 1}
        elif f.type == "uuid":
            kw[t.name] = uuid.UUID(bytes=x)
        else:
            kw[t.name] = x
    return kw


@pytest.mark.parametrize("pair", _PAIRS, ids=[f"{messages.APIS[k].name}-v{v}-{w}"
                                              for k, v, w in _PAIRS])
def test_same_bytes_as_kafka_python_generated_classes(pair):
    key, v, which = pair
    api = messages.APIS[key]
    fields = api.request if which == "request" else api.response
    codec = api.request_codec(v) if which == "request" else api.response_codec(v)
    cls = _THEIRS[(key, which)]
    rng = random.Random(key * 100 + v)
    for _ in range(6):
        msg = random_message(fields, v, rng)
        theirs = bytes(cls[v](**_to_theirs(cls._struct.fields, fields, msg, v, codec.flexible))
                       .encode(version=v))
        assert codec.encode(msg) == theirs
        assert codec.decode(theirs) == expected(fields, v, msg)


def test_flexible_versions_are_among_the_pairs():
    flexible = [p for p in _PAIRS if messages.APIS[p[0]].is_flexible(p[1])]
    assert len(_PAIRS) >= 300 and len(flexible) >= 120
    assert {(1, 17, "request"), (0, 11, "request"), (3, 12, "response")} <= set(_PAIRS)
