"""Content negotiation as Confluent's registry does it (406 / 415).

Responses are `application/vnd.schemaregistry.v1+json` unless the client asks for one of the
other two JSON types the registry speaks; a request body must come as one of those (or as
octet-stream, or without a Content-Type, which Jersey reads as octet-stream).
"""
from __future__ import annotations

V1 = "application/vnd.schemaregistry.v1+json"
PRODUCES = (V1, "application/vnd.schemaregistry+json", "application/json")
CONSUMES = (*PRODUCES, "application/octet-stream")


def _media_ranges(accept: str):
    for i, part in enumerate(accept.split(",")):
        fields = [f.strip() for f in part.split(";")]
        media = fields[0].lower()
        if not media:
            continue
        q = 1.0
        for f in fields[1:]:
            name, _, value = f.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        yield q, -i, media


def response_type(accept: str | None) -> str | None:
    """The content type to answer with, or None when nothing acceptable is offered (406)."""
    if not accept or not accept.strip():
        return V1
    for q, _, media in sorted(_media_ranges(accept), reverse=True):
        if q <= 0:
            continue
        if media in ("*/*", "application/*"):
            return V1
        if media in PRODUCES:
            return media
    return None


def request_type_ok(content_type: str | None) -> bool:
    if content_type is None or not content_type.strip():
        return True
    return content_type.split(";")[0].strip().lower() in CONSUMES
