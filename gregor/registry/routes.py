"""Confluent's REST routes over `RegistryService`, as confluent-kafka's client calls them.

A route is (method, path pattern, handler, writes?). Path segments are percent-decoded one by
one, so a subject may hold a `/` sent as %2F. Handlers are plain functions returning JSON
values; the app (app.py) runs them, reads inline and the rest on a thread.
Quirks met on purpose: booleans as `true`/`True`/`False`; `limit=-1`; both spellings
`deleted_only`/`deletedOnly` and `subject`/`subjectPrefix`; `-1` for latest.
"""
from __future__ import annotations

import json
from urllib.parse import unquote

from . import errors
from .schema_types import TYPES


def flag(req, name: str, default: bool = False) -> bool:
    values = req.query.get(name)
    if not values:
        return default
    v = values[-1].strip().lower()
    if v in ("true", "1", "yes", ""):
        return True
    if v in ("false", "0", "no"):
        return False
    raise errors.RegistryError(400, 400, f"query parameter {name}={values[-1]!r} is not a "
                                         "boolean")


def arg(req, *names: str, default=None):
    for name in names:
        values = req.query.get(name)
        if values:
            return values[-1]
    return default


def int_arg(req, name: str, default: int) -> int:
    v = arg(req, name)
    if v is None or v == "":
        return default
    try:
        return int(v)
    except ValueError:
        raise errors.RegistryError(400, 400, f"query parameter {name}={v!r} is not an "
                                             "integer") from None


def body_json(req):
    if not req.body.strip():
        raise errors.unprocessable("the request needs a JSON body")
    try:
        return json.loads(req.body)
    except (ValueError, UnicodeDecodeError) as e:
        raise errors.RegistryError(400, 400, f"the body is not JSON: {e}") from None
    except RecursionError:
        raise errors.RegistryError(400, 400, "the body's JSON is nested too deeply") from None


def _schema_id(raw: str) -> int:
    try:
        n = int(raw)
    except ValueError:
        raise errors.RegistryError(404, 40403, f"Schema {raw} not found") from None
    return n


def schema_json(sv, *, with_subject: bool) -> dict:
    out = {}
    if with_subject:
        out.update(subject=sv.subject, version=sv.version, id=sv.id)
    if sv.schema_type != "AVRO":
        out["schemaType"] = sv.schema_type
    if sv.references:
        out["references"] = [dict(r) for r in sv.references]
    out["schema"] = sv.schema
    return out


class Routes:
    """The route table, bound to one service."""

    def __init__(self, service):
        self.s = service
        R = self._routes = []

        def route(method, pattern, fn, write=False):
            R.append((method, tuple(pattern.strip("/").split("/")) if pattern != "/" else (),
                      fn, write))
        route("GET", "/", lambda req: {})
        route("GET", "/schemas/types", lambda req: list(TYPES))
        route("GET", "/schemas", self.list_schemas)
        route("GET", "/schemas/ids/{id}", self.schema_by_id)
        route("GET", "/schemas/ids/{id}/schema", self.raw_schema_by_id)
        route("GET", "/schemas/ids/{id}/subjects", self.id_subjects)
        route("GET", "/schemas/ids/{id}/versions", self.id_versions)
        route("GET", "/subjects", self.subjects)
        route("POST", "/subjects/{subject}", self.lookup)
        route("DELETE", "/subjects/{subject}", self.delete_subject, write=True)
        route("GET", "/subjects/{subject}/versions", self.versions)
        route("POST", "/subjects/{subject}/versions", self.register, write=True)
        route("GET", "/subjects/{subject}/versions/{version}", self.version)
        route("GET", "/subjects/{subject}/versions/{version}/schema", self.raw_version)
        route("GET", "/subjects/{subject}/versions/{version}/referencedby", self.referenced_by)
        route("DELETE", "/subjects/{subject}/versions/{version}", self.delete_version,
              write=True)
        route("POST", "/compatibility/subjects/{subject}/versions/{version}", self.compat)
        route("POST", "/compatibility/subjects/{subject}/versions", self.compat_all)
        route("GET", "/config", lambda req: self.s.get_config(None))
        route("PUT", "/config", lambda req: self.s.set_config(None, body_json(req)), write=True)
        route("DELETE", "/config", lambda req: self.s.delete_config(None), write=True)
        route("GET", "/config/{subject}", lambda req, subject: self.s.get_config(
            subject, flag(req, "defaultToGlobal")))
        route("PUT", "/config/{subject}", lambda req, subject: self.s.set_config(
            subject, body_json(req)), write=True)
        route("DELETE", "/config/{subject}", lambda req, subject: self.s.delete_config(subject),
              write=True)
        route("GET", "/mode", lambda req: self.s.get_mode(None))
        route("PUT", "/mode", lambda req: self.s.set_mode(None, body_json(req),
                                                           flag(req, "force")), write=True)
        route("DELETE", "/mode", lambda req: self.s.delete_mode(None), write=True)
        route("GET", "/mode/{subject}", lambda req, subject: self.s.get_mode(
            subject, flag(req, "defaultToGlobal")))
        route("PUT", "/mode/{subject}", lambda req, subject: self.s.set_mode(
            subject, body_json(req), flag(req, "force")), write=True)
        route("DELETE", "/mode/{subject}", lambda req, subject: self.s.delete_mode(subject),
              write=True)
        route("GET", "/contexts", lambda req: ["."])

    def match(self, method: str, raw_path: str):
        """(handler, params, writes) or raises 404/405 as Jersey would."""
        parts = tuple(unquote(p) for p in raw_path.strip("/").split("/")) \
            if raw_path.strip("/") else ()
        if parts and parts[0] == "associations":
            # confluent-kafka >= 2.14 asks first and falls back to the topic's subject on 404
            raise errors.RegistryError(404, 404, "associations are not kept by this registry")
        allowed = []
        for m, pattern, fn, write in self._routes:
            if len(pattern) != len(parts):
                continue
            params = {}
            for p, v in zip(pattern, parts):
                if p.startswith("{"):
                    params[p[1:-1]] = v
                elif p != v:
                    break
            else:
                if m == method:
                    return fn, params, write
                allowed.append(m)
        if allowed:
            raise errors.RegistryError(405, 405, f"HTTP 405 Method Not Allowed ({method} "
                                                 f"{raw_path}; allowed: {', '.join(allowed)})")
        raise errors.not_found(raw_path)

    # -- schemas by id ----------------------------------------------------------------------
    def _stored(self, raw_id: str):
        schema_id = _schema_id(raw_id)
        stored = self.s.state.by_id.get(schema_id)
        if stored is None:
            raise errors.schema_not_found(schema_id)
        return stored

    def _serialized(self, req, schema_type, text, references) -> str:
        """The schema text; a Protobuf schema as printed .proto text, or for
        `format=serialized` its base64 descriptor (what confluent-kafka's Protobuf
        deserializer asks for)."""
        if schema_type != "PROTOBUF":
            return text
        parsed = self.s.parse(schema_type, text, references)
        return parsed.serialized() if arg(req, "format") == "serialized" else parsed.text()

    def schema_by_id(self, req, id):
        stored = self._stored(id)
        refs = [{"name": n, "subject": s, "version": v} for n, s, v in stored.references]
        out = {}
        if stored.schema_type != "AVRO":
            out["schemaType"] = stored.schema_type
        if stored.references:
            out["references"] = [{"name": n, "subject": s, "version": v}
                                 for n, s, v in stored.references]
        out["schema"] = self._serialized(req, stored.schema_type, stored.schema, refs)
        return out

    def raw_schema_by_id(self, req, id):
        stored = self._stored(id)
        refs = [{"name": n, "subject": s, "version": v} for n, s, v in stored.references]
        text = self._serialized(req, stored.schema_type, stored.schema, refs)
        return json.loads(text) if stored.schema_type != "PROTOBUF" else text

    def id_subjects(self, req, id):
        stored = self._stored(id)
        return sorted({sv.subject for sv in self.s.state.uses_of(stored.id,
                                                                 flag(req, "deleted"))})

    def id_versions(self, req, id):
        stored = self._stored(id)
        return [{"subject": sv.subject, "version": sv.version}
                for sv in self.s.state.uses_of(stored.id, flag(req, "deleted"))]

    def list_schemas(self, req):
        prefix = arg(req, "subjectPrefix", "subject", default="")
        deleted, latest_only = flag(req, "deleted"), flag(req, "latestOnly")
        out = []
        for subject in self.s.subjects(deleted=deleted, prefix=prefix):
            versions = self.s.state.live_versions(subject, deleted)
            for sv in (versions[-1:] if latest_only else versions):
                out.append(schema_json(sv, with_subject=True))
        offset, limit = int_arg(req, "offset", 0), int_arg(req, "limit", -1)
        out = out[max(offset, 0):]
        return out if limit < 0 else out[:limit]

    # -- subjects ---------------------------------------------------------------------------
    def subjects(self, req):
        return self.s.subjects(deleted=flag(req, "deleted"),
                               deleted_only=flag(req, "deleted_only") or flag(req, "deletedOnly"),
                               prefix=arg(req, "subjectPrefix", "subject"),
                               offset=int_arg(req, "offset", 0), limit=int_arg(req, "limit", -1))

    def versions(self, req, subject):
        return self.s.versions(subject, deleted=flag(req, "deleted"),
                               deleted_only=flag(req, "deleted_only") or flag(req, "deletedOnly"),
                               offset=int_arg(req, "offset", 0), limit=int_arg(req, "limit", -1))

    def version(self, req, subject, version):
        sv = self.s.get_version(subject, version, flag(req, "deleted"))
        out = schema_json(sv, with_subject=True)
        out["schema"] = self._serialized(req, sv.schema_type, sv.schema, sv.references)
        return out

    def raw_version(self, req, subject, version):
        sv = self.s.get_version(subject, version, flag(req, "deleted"))
        text = self._serialized(req, sv.schema_type, sv.schema, sv.references)
        return json.loads(text) if sv.schema_type != "PROTOBUF" else text

    def referenced_by(self, req, subject, version):
        sv = self.s.get_version(subject, version, True)
        return self.s.state.referenced_by(subject, sv.version)

    def lookup(self, req, subject):
        sv = self.s.lookup(subject, body_json(req), flag(req, "normalize"), flag(req, "deleted"))
        return schema_json(sv, with_subject=True)

    def register(self, req, subject):
        return {"id": self.s.register(subject, body_json(req), flag(req, "normalize"))}

    def delete_subject(self, req, subject):
        return self.s.delete_subject(subject, flag(req, "permanent"))

    def delete_version(self, req, subject, version):
        return self.s.delete_version(subject, version, flag(req, "permanent"))

    def compat(self, req, subject, version):
        return self.s.test_compatibility(subject, version, body_json(req),
                                         flag(req, "normalize"), flag(req, "verbose"))

    def compat_all(self, req, subject):
        return self.s.test_compatibility(subject, None, body_json(req), flag(req, "normalize"),
                                         flag(req, "verbose"))
