"""How the console shows records: keys, values and headers as text (cut in lists), pretty JSON
or a hex dump, and exports as JSON lines or CSV. No I/O: records in, strings and dicts out.

Bytes that are not UTF-8 are shown as hex in lists and carried as base64 in JSON (the same
{"base64": ...} shape as `gregor consume --format json`), so nothing is lost on export or
re-produce.
"""
from __future__ import annotations

import base64
import csv
import io
import json
from datetime import datetime, timezone

VIEWS = ("text", "json", "hex")
_HEX_ROW = 16


def as_text(b: bytes | None) -> tuple[str | None, bool]:
    """(text, is_utf8): the bytes as text, or as hex when they are not UTF-8."""
    if b is None:
        return None, True
    try:
        return b.decode("utf-8"), True
    except UnicodeDecodeError:
        return b.hex(" "), False


def cut(text: str | None, limit: int) -> tuple[str | None, bool]:
    if text is None or len(text) <= limit:
        return text, False
    return text[:limit], True


def iso(ts_ms: int) -> str | None:
    if ts_ms is None or ts_ms < 0:
        return None
    return datetime.fromtimestamp(ts_ms / 1000, timezone.utc).isoformat(timespec="milliseconds")


def json_bytes(b: bytes | None):
    if b is None:
        return None
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(b).decode()}


def bytes_from_json(v) -> bytes | None:
    if v is None:
        return None
    if isinstance(v, dict) and "base64" in v:
        return base64.b64decode(v["base64"])
    return str(v).encode()


def _decoded(decoder, r):
    """(key, value) Decoded results, or (None, None) without a registry."""
    if decoder is None:
        return None, None
    return decoder.decode(r.topic, r.key), decoder.decode(r.topic, r.value)


def _schema_fields(prefix: str, d) -> dict:
    if d is None:
        return {f"{prefix}_schema": None, f"{prefix}_note": None}
    return {f"{prefix}_schema": ({"id": d.schema_id, "type": d.schema_type} if d.ok else None),
            f"{prefix}_note": d.note}


def summary(r, value_chars: int, decoder=None) -> dict:
    """A record for a list: key and value cut to value_chars characters; with a decoder
    (decode.RecordDecoder), registry-framed keys and values as their decoded JSON."""
    dk, dv = _decoded(decoder, r)
    key, key_utf8 = (dk.text, True) if dk is not None and dk.ok else as_text(r.key)
    value, value_utf8 = (dv.text, True) if dv is not None and dv.ok else as_text(r.value)
    key, key_cut = cut(key, value_chars)
    value, value_cut = cut(value, value_chars)
    headers = []
    for k, v in r.headers:
        text, _ = as_text(v)
        headers.append([k, cut(text, value_chars)[0]])
    return {"partition": r.partition, "offset": r.offset, "timestamp": r.timestamp,
            "time": iso(r.timestamp), "key": key, "key_binary": not key_utf8,
            "key_truncated": key_cut, "value": value, "value_binary": not value_utf8,
            "value_truncated": value_cut,
            "value_size": None if r.value is None else len(r.value), "headers": headers,
            **_schema_fields("key", dk), **_schema_fields("value", dv)}


def full(r, decoder=None) -> dict:
    """A record with every byte: text where it is UTF-8, else base64; with a decoder,
    registry-framed keys and values as the decoded object (key_schema / value_schema say
    which schema id and type; *_note why one was not decoded)."""
    dk, dv = _decoded(decoder, r)
    return {"topic": r.topic, "partition": r.partition, "offset": r.offset,
            "timestamp": r.timestamp, "time": iso(r.timestamp),
            "timestamp_type": r.timestamp_type_name,
            "key": dk.value if dk is not None and dk.ok else json_bytes(r.key),
            "value": dv.value if dv is not None and dv.ok else json_bytes(r.value),
            "headers": [[k, json_bytes(v)] for k, v in r.headers],
            **_schema_fields("key", dk), **_schema_fields("value", dv)}


def pretty_json(b: bytes | None) -> str | None:
    """The value as indented JSON, or None when it is not JSON."""
    if b is None:
        return None
    try:
        return json.dumps(json.loads(b), indent=2, ensure_ascii=False, sort_keys=False)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def hex_dump(b: bytes | None) -> str | None:
    """offset  hex bytes  |printable|, 16 bytes a row."""
    if b is None:
        return None
    rows = []
    for i in range(0, len(b), _HEX_ROW):
        chunk = b[i:i + _HEX_ROW]
        printable = "".join(chr(c) if 32 <= c < 127 else "." for c in chunk)
        rows.append(f"{i:08x}  {chunk.hex(' '):<{_HEX_ROW * 3 - 1}}  |{printable}|")
    return "\n".join(rows)


def view(b: bytes | None, how: str) -> str | None:
    if how == "hex":
        return hex_dump(b)
    if how == "json":
        return pretty_json(b)
    return as_text(b)[0]


def export_jsonl(records, decoder=None) -> str:
    return "".join(json.dumps(full(r, decoder), ensure_ascii=False) + "\n" for r in records)


def export_csv(records, decoder=None) -> str:
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["topic", "partition", "offset", "timestamp", "key", "value", "headers"])
    for r in records:
        d = full(r, decoder)
        w.writerow([d["topic"], d["partition"], d["offset"], d["timestamp"],
                    _csv_cell(d["key"]), _csv_cell(d["value"]),
                    json.dumps(d["headers"], ensure_ascii=False)])
    return out.getvalue()


def _csv_cell(v) -> str:
    if v is None:
        return ""
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
