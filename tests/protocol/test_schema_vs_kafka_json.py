"""Our message descriptions against Kafka's own schema files, version by version.

For every API we define and every version in its range, the fields present in that version must
match Kafka's: same names (compared lower-cased without underscores), same order, same types,
same nullability, same tags in flexible versions, same defaults, recursively through structs.
The reference files live outside the repo (../shared/kafka-protocol/messages); without them
the test is skipped with a reason, never silently passed.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gregor.protocol import messages
from gregor.protocol.schema import NULL, F

_REPO = Path(__file__).resolve().parents[2]
_SPEC_DIR = _REPO.parent / "shared" / "kafka-protocol" / "messages"

pytestmark = pytest.mark.skipif(
    not _SPEC_DIR.is_dir(),
    reason=f"Kafka's schema files are not at {_SPEC_DIR}; cannot compare descriptions",
)

_PRIMITIVES = {"bool", "int8", "int16", "int32", "int64", "uint16", "uint32", "float64",
               "string", "bytes", "records", "uuid"}
_TOP = 1 << 15


def _load(name: str) -> dict:
    text = (_SPEC_DIR / f"{name}.json").read_text()
    # The files carry // line comments, which JSON does not allow.
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    return json.loads(text)


def _range(spec: str | None) -> tuple[int, int] | None:
    if spec is None or spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), _TOP
    lo, _, hi = spec.partition("-")
    return int(lo), int(hi or lo)


def _has(rng, v: int) -> bool:
    return rng is not None and rng[0] <= v <= rng[1]


def _norm_name(name: str) -> str:
    return name.replace("_", "").lower()


def _norm_default(value, typ: str):
    """Both sides' defaults as comparable Python values ('null' and NULL -> None)."""
    if value is NULL or value == "null":
        return None
    if typ == "bool":
        return str(value).lower() == "true" if isinstance(value, str) else bool(value)
    if typ in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        return int(value, 0) if isinstance(value, str) else int(value)
    if typ == "float64":
        return float(value)
    return value


def _zero(typ: str):
    return {"bool": False, "string": "", "float64": 0.0}.get(typ, 0)


# -- one normal form for both sides: [(name, type, nullable, tag, default, children)] ------------

def _kafka_fields(fields: list[dict], common: dict, v: int, flexible: bool) -> list[tuple]:
    out = []
    for f in fields:
        if not _has(_range(f["versions"]), v):
            continue
        t = f["type"]
        children = None
        if t.startswith("[]") and t[2:] not in _PRIMITIVES:
            typ = "[]"
            children = _kafka_fields(f.get("fields") or common[t[2:]], common, v, flexible)
        elif t.startswith("[]") or t in _PRIMITIVES:
            typ = t
        else:
            typ = "struct"
            children = _kafka_fields(f.get("fields") or common[t], common, v, flexible)
        tag = f.get("tag") if flexible and _has(_range(f.get("taggedVersions")), v) else None
        default = None
        if children is None and not typ.startswith("[]"):
            raw = f.get("default")
            default = _zero(typ) if raw is None else _norm_default(raw, typ)
            if typ in ("bytes", "records", "uuid") and raw is None:
                default = None  # no default to compare for these
        out.append((_norm_name(f["name"]), typ, _has(_range(f.get("nullableVersions")), v),
                    tag, default, children))
    return out


def _our_fields(fields: list[F], v: int, flexible: bool) -> list[tuple]:
    out = []
    for f in fields:
        if not _has(f.versions, v):
            continue
        children = _our_fields(f.fields, v, flexible) if f.fields is not None else None
        tag = f.tag if flexible and _has(f.tagged_versions, v) else None
        default = None
        if children is None and not f.type.startswith("[]"):
            default = _zero(f.type) if f.default is None else _norm_default(f.default, f.type)
            if f.type in ("bytes", "records", "uuid") and f.default is None:
                default = None
        out.append((_norm_name(f.name), f.type, _has(f.nullable_versions, v), tag, default,
                    children))
    return out


def _diff(ours: list[tuple], theirs: list[tuple], path: str) -> list[str]:
    problems = []
    if [o[0] for o in ours] != [t[0] for t in theirs]:
        return [f"{path}: fields {[o[0] for o in ours]} != Kafka's {[t[0] for t in theirs]}"]
    labels = ("name", "type", "nullable", "tag", "default")
    for o, t in zip(ours, theirs):
        for i, label in enumerate(labels):
            if o[i] != t[i]:
                problems.append(f"{path}.{o[0]}: {label} {o[i]!r} != Kafka's {t[i]!r}")
        if o[5] is not None or t[5] is not None:
            problems += _diff(o[5] or [], t[5] or [], f"{path}.{o[0]}")
    return problems


# APIs the reference snapshot has no schema file for at all (added to Kafka after it); their
# fields are checked in their own tests (tests/protocol/test_share_messages.py).
NOT_IN_REFERENCE = {"DescribeShareGroupOffsets", "AlterShareGroupOffsets",
                    "DeleteShareGroupOffsets"}
_APIS = sorted((a for a in messages.APIS.values() if a.name not in NOT_IN_REFERENCE),
               key=lambda a: a.key)

# APIs whose descriptions reach versions newer than the reference snapshot (Kafka's 3.9 line):
# name -> the snapshot's highest version. Versions up to it are compared here; the newer ones
# are checked field by field in the API's own test (tests/protocol/test_share_messages.py for
# the share-group APIs, after franz-go's kmsg definitions of Kafka 4.2).
_BEYOND_REFERENCE = {"ShareGroupHeartbeat": 0, "ShareGroupDescribe": 0, "ShareFetch": 0,
                     "ShareAcknowledge": 0,
                     # v13 against Kafka 4.3's files: test_schema_vs_newer_kafka_json.py
                     "Metadata": 12}


def _compared(api) -> tuple[int, int]:
    return api.valid[0], _BEYOND_REFERENCE.get(api.name, api.valid[1])


def test_every_api_of_the_issue_is_defined():
    wanted = {"Produce", "Fetch", "ListOffsets", "Metadata", "OffsetCommit", "OffsetFetch",
              "FindCoordinator", "JoinGroup", "Heartbeat", "LeaveGroup", "SyncGroup",
              "DescribeGroups", "ListGroups", "SaslHandshake", "ApiVersions", "CreateTopics",
              "DeleteTopics", "DeleteRecords", "InitProducerId", "OffsetForLeaderEpoch",
              "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit",
              "DescribeConfigs", "AlterConfigs", "SaslAuthenticate", "CreatePartitions",
              "DescribeCluster", "DescribeAcls", "CreateAcls", "DeleteAcls",
              "DescribeUserScramCredentials", "AlterUserScramCredentials"}
    assert wanted <= set(messages.BY_NAME)


@pytest.mark.parametrize("api", _APIS, ids=lambda a: a.name)
def test_versions_match_kafka(api):
    for direction in ("Request", "Response"):
        spec = _load(api.name + direction)
        assert spec["apiKey"] == api.key
        assert _range(spec["validVersions"]) == _compared(api), f"{direction} validVersions"
        flex = _range(spec["flexibleVersions"])
        assert (flex[0] if flex else None) == api.flexible, f"{direction} flexibleVersions"


@pytest.mark.parametrize("api", _APIS, ids=lambda a: a.name)
def test_fields_match_kafka_in_every_version(api):
    problems = []
    for direction, ours in (("Request", api.request), ("Response", api.response)):
        spec = _load(api.name + direction)
        common = {c["name"]: c["fields"] for c in spec.get("commonStructs", [])}
        for v in range(_compared(api)[0], _compared(api)[1] + 1):
            flexible = api.is_flexible(v)
            problems += _diff(_our_fields(ours, v, flexible),
                              _kafka_fields(spec["fields"], common, v, flexible),
                              f"{api.name}{direction} v{v}")
    assert not problems, "\n".join(problems)


def test_field_names_are_snake_case():
    bad = []

    def walk(fields, path):
        for f in fields:
            if not re.fullmatch(r"[a-z][a-z0-9_]*", f.name):
                bad.append(f"{path}.{f.name}")
            if f.fields:
                walk(f.fields, f"{path}.{f.name}")
    for api in _APIS:
        walk(api.request, api.name + "Request")
        walk(api.response, api.name + "Response")
    assert not bad


def test_the_comparison_notices_a_difference():
    """The checker itself must be able to fail: a field with a wrong type is reported."""
    spec = _load("HeartbeatRequest")
    api = messages.api("Heartbeat")
    wrong = [F(f.name, "int64" if f.name == "generation_id" else f.type, v=f.v,
               nullable=f.nullable, tagged=f.tagged, tag=f.tag, default=f.default)
             for f in api.request]
    problems = _diff(_our_fields(wrong, 1, False), _kafka_fields(spec["fields"], {}, 1, False),
                     "HeartbeatRequest v1")
    assert problems and "generationid: type" in problems[0]
