"""Versions newer than the reference snapshot (../shared/kafka-protocol, Kafka's 3.9 line),
compared with the Kafka 4.3 schema files that kafka-python ships (kafka/protocol/schemas/
resources), by the same rules as test_schema_vs_kafka_json: names, order, types, nullability,
tags and defaults, version by version."""
from __future__ import annotations

from pathlib import Path

import pytest

from gregor.protocol import messages
from tests.protocol import test_schema_vs_kafka_json as ref

kafka_protocol = pytest.importorskip(
    "kafka.protocol", reason="kafka-python is a test dependency: pip install -e '.[test]'")
_NEWER = Path(kafka_protocol.__file__).parent / "schemas" / "resources"

pytestmark = ref.pytestmark


def _load(directory: Path, name: str) -> dict | None:
    path = directory / f"{name}.json"
    if not path.is_file():
        return None
    text = "\n".join(line for line in path.read_text().splitlines()
                     if not line.lstrip().startswith("//"))
    return ref.json.loads(text)


def _beyond_reference():
    out = []
    if not ref._SPEC_DIR.is_dir():        # the module is skipped (pytestmark), not broken
        return out
    for api in sorted(messages.APIS.values(), key=lambda a: a.key):
        if api.name in ref.NOT_IN_REFERENCE:
            continue
        reference = ref._load(api.name + "Response")
        top = ref._range(reference["validVersions"])[1]
        if api.valid[1] > top and _load(_NEWER, api.name + "Response") is not None:
            out.append((api, top))
    return out


def test_metadata_v13_is_compared():
    assert "Metadata" in {api.name for api, _ in _beyond_reference()}


@pytest.mark.parametrize("api,top", _beyond_reference(), ids=lambda x: getattr(x, "name", x))
def test_newer_versions_match_kafka_4_3(api, top):
    problems = []
    for direction, ours in (("Request", api.request), ("Response", api.response)):
        spec = _load(_NEWER, api.name + direction)
        assert ref._range(spec["validVersions"])[1] >= api.valid[1], f"{direction} versions"
        common = {c["name"]: c["fields"] for c in spec.get("commonStructs", [])}
        for v in range(top + 1, api.valid[1] + 1):
            flexible = api.is_flexible(v)
            problems += ref._diff(ref._our_fields(ours, v, flexible),
                                  ref._kafka_fields(spec["fields"], common, v, flexible),
                                  f"{api.name}{direction} v{v}")
    assert not problems, "\n".join(problems)
