"""Test helpers: hypothesis strategies that build messages from our schema descriptions, and the
value a message must have after an encode/decode round trip (fields absent in a version come
back as their defaults)."""
from __future__ import annotations

from hypothesis import strategies as st

from gregor.protocol import messages
from gregor.protocol.schema import NULL, Api, F

_INT_BOUNDS = {
    "int8": (-(1 << 7), (1 << 7) - 1), "int16": (-(1 << 15), (1 << 15) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
    "uint16": (0, (1 << 16) - 1), "uint32": (0, (1 << 32) - 1),
}
# Small sizes keep examples fast; the codec's length handling does not depend on size.
_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=6)
_BINARY = st.binary(max_size=12)


def _primitive(t: str) -> st.SearchStrategy:
    if t in _INT_BOUNDS:
        lo, hi = _INT_BOUNDS[t]
        return st.integers(lo, hi)
    if t == "bool":
        return st.booleans()
    if t == "float64":
        return st.floats(allow_nan=False)
    if t == "string":
        return _TEXT
    if t in ("bytes", "records"):
        return _BINARY
    if t == "uuid":
        return st.binary(min_size=16, max_size=16)
    raise AssertionError(t)


def _present(f: F, v: int) -> bool:
    return f.versions is not None and f.versions[0] <= v <= f.versions[1]


def _nullable(f: F, v: int) -> bool:
    r = f.nullable_versions
    return r is not None and r[0] <= v <= r[1]


def field_strategy(f: F, v: int) -> st.SearchStrategy:
    if f.type == "struct":
        s = message_strategy(f.fields, v)
    elif f.type == "[]":
        s = st.lists(message_strategy(f.fields, v), max_size=2)
    elif f.type.startswith("[]"):
        s = st.lists(_primitive(f.type[2:]), max_size=3)
    else:
        s = _primitive(f.type)
    return st.none() | s if _nullable(f, v) else s


def message_strategy(fields: list[F], v: int) -> st.SearchStrategy:
    """Dicts holding every field present in version v."""
    return st.fixed_dictionaries({f.name: field_strategy(f, v) for f in fields if _present(f, v)})


def default_value(f: F, v: int):
    if f.default is NULL:
        return None
    if f.default is not None:
        return f.default
    if f.type.startswith("[]"):
        return []
    if f.type == "struct":
        return {g.name: default_value(g, v) for g in f.fields}
    return {"bool": False, "string": "", "bytes": b"", "records": b"", "uuid": bytes(16),
            "float64": 0.0}.get(f.type, 0)


def expected(fields: list[F], v: int, obj: dict) -> dict:
    """What decoding the encoding of obj at version v must give."""
    out = {}
    for f in fields:
        if not _present(f, v):
            out[f.name] = default_value(f, v)
            continue
        x = obj[f.name]
        if x is not None and f.type == "struct":
            x = expected(f.fields, v, x)
        elif x is not None and f.type == "[]":
            x = [expected(f.fields, v, e) for e in x]
        out[f.name] = x
    return out


def all_codecs() -> list[tuple[Api, int, str]]:
    """(api, version, 'request'|'response') for every version of every API we define."""
    out = []
    for api in sorted(messages.APIS.values(), key=lambda a: a.key):
        for v in range(api.valid[0], api.valid[1] + 1):
            out.append((api, v, "request"))
            out.append((api, v, "response"))
    return out


def codec_id(item) -> str:
    api, v, which = item
    return f"{api.name}-v{v}-{which}"


# -- a plain random generator (no hypothesis), for fuzzing at volume -----------------------------

def random_value(f: F, v: int, rng) -> object:
    if _nullable(f, v) and rng.random() < 0.15:
        return None
    t = f.type
    if t == "struct":
        return random_message(f.fields, v, rng)
    if t == "[]":
        return [random_message(f.fields, v, rng) for _ in range(rng.randint(0, 2))]
    if t.startswith("[]"):
        return [_random_primitive(t[2:], rng) for _ in range(rng.randint(0, 3))]
    return _random_primitive(t, rng)


def _random_primitive(t: str, rng):
    if t in _INT_BOUNDS:
        lo, hi = _INT_BOUNDS[t]
        return rng.choice([0, -1, 1, lo, hi, rng.randint(lo, hi)]) if lo < 0 else rng.randint(lo, hi)
    if t == "bool":
        return rng.random() < 0.5
    if t == "float64":
        return rng.uniform(-1e9, 1e9)
    if t == "string":
        return "".join(rng.choice("abcxyz-_.é") for _ in range(rng.randint(0, 8)))
    if t in ("bytes", "records"):
        return rng.randbytes(rng.randint(0, 16))
    if t == "uuid":
        return rng.randbytes(16)
    raise AssertionError(t)


def random_message(fields: list[F], v: int, rng) -> dict:
    return {f.name: random_value(f, v, rng) for f in fields if _present(f, v)}
