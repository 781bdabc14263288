"""Schemas pages: `/schemas` (subjects), `/schemas/{subject}` (versions, the latest schema,
compatibility levels, two versions side by side with ?a=&b=) and
`POST /schemas/{subject}/check` (a schema text tested against the latest version).

Registry calls run on a thread of their own (asyncio.to_thread), not the broker pool, so a
registry that is down never turns on the "broker cannot be reached" banner. Without a registry
configured the page says how to configure one."""
from __future__ import annotations

import asyncio

from starlette.exceptions import HTTPException

from ..schema_registry.errors import SchemaRegistryError, SubjectNotFoundError
from . import schemas_model as model
from .render import read_change, respond


def _registry(request):
    return request.app.state.console.registry


def _unconfigured(request):
    return respond(request, "schemas.html", {"configured": False, "subjects": [],
                                             "error": None})


async def schemas(request):
    reg = _registry(request)
    if reg is None:
        return _unconfigured(request)
    try:
        data = await asyncio.to_thread(model.subjects, reg)
    except SchemaRegistryError as e:
        return respond(request, "schemas.html", {"configured": True, "subjects": [],
                                                 "error": str(e)}, 502)
    return respond(request, "schemas.html", {"configured": True, "error": None,
                                             "url": request.app.state.console.settings
                                             .schema_registry_url, **data})


def _version(raw, what: str):
    if raw in (None, ""):
        return None
    if raw == "latest":
        return raw
    try:
        return int(raw)
    except ValueError:
        raise HTTPException(400, f"{what} must be a version number or latest") from None


async def _subject_page(request, checked=None, form=None, status=200):
    reg = _registry(request)
    if reg is None:
        return _unconfigured(request)
    name = request.path_params["subject"]
    try:
        data = await asyncio.to_thread(model.subject, reg, name)
    except SubjectNotFoundError:
        raise HTTPException(404, f"subject {name!r} is not in the registry") from None
    except SchemaRegistryError as e:
        raise HTTPException(502, f"the schema registry answered: {e}") from None
    p = request.query_params
    a, b = _version(p.get("a"), "a"), _version(p.get("b"), "b")
    versions = data["versions"]
    if a is None and b is None and len(versions) > 1:
        a, b = versions[-2], versions[-1]
    data["diff"] = None
    if a is not None and b is not None:
        try:
            data["diff"] = await asyncio.to_thread(model.compare, reg, name, a, b)
        except SchemaRegistryError as e:
            raise HTTPException(404, f"cannot compare versions {a} and {b}: {e}") from None
    data["check"] = checked
    data["check_form"] = form or {"schema": "", "type": data["latest"]["type"]}
    return respond(request, "subject.html", data, status)


async def subject(request):
    return await _subject_page(request)


async def check(request):
    reg = _registry(request)
    if reg is None:
        return _unconfigured(request)
    data = await read_change(request)
    text = str(data.get("schema") or "")
    kind = str(data.get("type") or "AVRO").upper()
    if not text.strip():
        raise HTTPException(400, "the schema text is empty")
    try:
        verdict = await asyncio.to_thread(model.check, reg, request.path_params["subject"],
                                          text, kind)
    except SubjectNotFoundError:
        raise HTTPException(404, f"subject {request.path_params['subject']!r} is not in the "
                                 "registry") from None
    except SchemaRegistryError as e:
        raise HTTPException(502, f"the schema registry answered: {e}") from None
    return await _subject_page(request, verdict, {"schema": text, "type": kind})


ROUTES = [
    ("/schemas", schemas, ["GET"]),
    # Subjects may hold "/" (Protobuf imports are registered under their path).
    ("/schemas/{subject:path}/check", check, ["POST"]),
    ("/schemas/{subject:path}", subject, ["GET"]),
]
