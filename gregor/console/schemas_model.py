"""What the Schemas pages show, read from the Schema Registry (blocking calls: run on a
thread): subjects with their latest version, type and compatibility level; one subject's
versions; two versions side by side with a line diff; a schema text tested against a
subject's latest version with the registry's own messages (verbose=true)."""
from __future__ import annotations

import difflib
import json

from ..schema_registry import Schema
from ..schema_registry.errors import SchemaRegistryError

TYPES = ("AVRO", "JSON", "PROTOBUF")
MAX_SUBJECTS = 1000          # subjects listed on one page (each costs two registry calls)


def _q(s: str) -> str:
    from urllib.parse import quote
    return quote(s, safe="")


def compatibility(registry, subject: str | None) -> str | None:
    """The subject's own level (None when it has none: the global one applies), or the
    global level for subject None."""
    try:
        return registry.get_compatibility(subject)
    except SchemaRegistryError as e:
        if e.error_code == 40408:        # no level of its own
            return None
        raise


def pretty(text: str, kind: str) -> str:
    """Avro and JSON Schema texts indented; Protobuf as the registry gives it."""
    if kind in ("AVRO", "JSON"):
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            pass
    return text


def subjects(registry) -> dict:
    names = sorted(registry.get_subjects())
    rows = []
    for name in names[:MAX_SUBJECTS]:
        latest = registry.get_latest_version(name)
        rows.append({"subject": name, "version": latest.version, "id": latest.schema_id,
                     "type": latest.schema.schema_type or "AVRO",
                     "compatibility": compatibility(registry, name)})
    return {"subjects": rows, "total": len(names), "shown": len(rows),
            "global_compatibility": compatibility(registry, None)}


def subject(registry, name: str) -> dict:
    versions = registry.get_versions(name)
    latest = registry.get_version(name, versions[-1])
    kind = latest.schema.schema_type or "AVRO"
    return {"subject": name, "versions": versions, "latest": {
                "version": latest.version, "id": latest.schema_id, "type": kind,
                "schema": pretty(latest.schema.schema_str, kind),
                "references": [{"name": r.name, "subject": r.subject, "version": r.version}
                               for r in latest.schema.references]},
            "compatibility": compatibility(registry, name),
            "global_compatibility": compatibility(registry, None)}


def side_by_side(a: str, b: str) -> list[dict]:
    """Rows {left, right, tag} of two texts aligned by difflib: tag is equal, replace,
    delete (only left) or insert (only right); a line number with each side."""
    la, lb = a.splitlines(), b.splitlines()
    rows = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, la, lb,
                                                       autojunk=False).get_opcodes():
        for k in range(max(i2 - i1, j2 - j1)):
            i, j = i1 + k, j1 + k
            rows.append({"tag": tag,
                         "ln": i + 1 if i < i2 else None, "left": la[i] if i < i2 else None,
                         "rn": j + 1 if j < j2 else None, "right": lb[j] if j < j2 else None})
    return rows


def compare(registry, name: str, a, b) -> dict:
    va, vb = registry.get_version(name, a), registry.get_version(name, b)
    ta = pretty(va.schema.schema_str, va.schema.schema_type or "AVRO")
    tb = pretty(vb.schema.schema_str, vb.schema.schema_type or "AVRO")
    rows = side_by_side(ta, tb)
    return {"a": {"version": va.version, "id": va.schema_id},
            "b": {"version": vb.version, "id": vb.schema_id}, "rows": rows,
            "changed": sum(r["tag"] != "equal" for r in rows),
            "unified": "\n".join(difflib.unified_diff(
                ta.splitlines(), tb.splitlines(), f"version {va.version}",
                f"version {vb.version}", lineterm=""))}


def check(registry, name: str, text: str, kind: str) -> dict:
    """POST /compatibility/subjects/{s}/versions/latest?verbose=true with the text: the
    registry's verdict and messages (an invalid schema's 422 is a verdict too)."""
    if kind not in TYPES:
        raise ValueError(f"schema type must be one of {', '.join(TYPES)}")
    body = Schema(text, kind).to_dict()
    try:
        # verbose=true is not in the client's test_compatibility (nor confluent-kafka's)
        reply = registry._request("POST", f"/compatibility/subjects/{_q(name)}/versions/latest",
                                  body, {"verbose": True})
    except SchemaRegistryError as e:
        if e.error_code in (42201, 422) or e.http_status == 422:
            return {"is_compatible": False, "messages": [e.message or str(e)],
                    "invalid": True}
        raise
    return {"is_compatible": bool(reply.get("is_compatible")),
            "messages": [str(m) for m in reply.get("messages") or []], "invalid": False}
