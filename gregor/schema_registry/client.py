"""A Confluent Schema Registry client: the REST calls confluent-kafka's SchemaRegistryClient
makes, with its configuration names, over urllib (no HTTP library needed), and the caches
serializers rely on (id -> schema forever, since ids never change meaning; subject+schema ->
id; a subject's latest version for cache.latest.ttl.sec).

The transport is one function (method, url, body, headers, timeout) -> (status, body bytes),
so the request logic and the caches are tested without a server."""
from __future__ import annotations

import base64
import json
import random
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import OrderedDict

from .errors import SchemaRegistryError, error_for
from .types import RegisteredSchema, Schema

ACCEPT = ("application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, "
          "application/json")
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
# Statuses confluent-kafka retries (a leader change, overload, a proxy in front).
RETRIABLE = frozenset({408, 429, 500, 502, 503, 504})
# A reply larger than this is refused: the largest schemas seen in practice are a few MB.
MAX_REPLY_BYTES = 64 << 20

_KNOWN = {"url", "basic.auth.user.info", "basic.auth.credentials.source", "ssl.ca.location",
          "ssl.certificate.location", "ssl.key.location", "ssl.key.password", "timeout",
          "cache.capacity", "cache.latest.ttl.sec", "max.retries", "retries.wait.ms",
          "retries.max.wait.ms", "ssl.check.hostname"}


def _urllib_transport(ssl_context):
    def send(method, url, body, headers, timeout):
        req = urllib.request.Request(url, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=ssl_context) as resp:
                return resp.status, resp.read(MAX_REPLY_BYTES + 1)
        except urllib.error.HTTPError as e:
            return e.code, e.read(MAX_REPLY_BYTES + 1)
    return send


class _LRU:
    def __init__(self, capacity: int):
        self._d: OrderedDict = OrderedDict()
        self._cap = capacity

    def get(self, k):
        v = self._d.get(k)
        if v is not None:
            self._d.move_to_end(k)
        return v

    def put(self, k, v):
        self._d[k] = v
        self._d.move_to_end(k)
        while len(self._d) > self._cap:
            self._d.popitem(last=False)

    def pop_where(self, pred):
        for k in [k for k in self._d if pred(k)]:
            del self._d[k]


class SchemaRegistryClient:
    """SchemaRegistryClient({"url": "http://host:8081", "basic.auth.user.info": "u:p", ...}).

    Method names, arguments and results match confluent-kafka's client, so gregor's
    serializers work with either, and code written for one runs with the other."""

    def __init__(self, conf: dict | None = None, *, transport=None, clock=time.monotonic,
                 **kwargs):
        conf = {**(conf or {}), **{k.replace("_", "."): v for k, v in kwargs.items()}}
        unknown = set(conf) - _KNOWN
        if unknown:
            raise ValueError(f"unknown schema registry config {sorted(unknown)}; "
                             f"known: {sorted(_KNOWN)}")
        urls = conf.get("url")
        if not urls:
            raise ValueError("schema registry config 'url' is required "
                             "(e.g. http://127.0.0.1:8081)")
        self._urls = []
        self._auth = None
        for u in str(urls).split(","):
            parsed = urllib.parse.urlsplit(u.strip())
            if parsed.scheme not in ("http", "https"):
                raise ValueError(f"schema registry url {u!r} must start with http:// or https://")
            if parsed.username is not None:
                self._auth = (urllib.parse.unquote(parsed.username),
                              urllib.parse.unquote(parsed.password or ""))
                netloc = parsed.hostname + (f":{parsed.port}" if parsed.port else "")
                parsed = parsed._replace(netloc=netloc)
            self._urls.append(urllib.parse.urlunsplit(parsed).rstrip("/"))
        source = str(conf.get("basic.auth.credentials.source", "USER_INFO")).upper()
        info = conf.get("basic.auth.user.info")
        if info:
            if source not in ("USER_INFO", "URL"):
                raise ValueError(f"basic.auth.credentials.source {source!r}: only USER_INFO "
                                 "and URL are supported")
            if ":" not in info:
                raise ValueError("basic.auth.user.info must be 'user:password'")
            self._auth = tuple(info.split(":", 1))
        self._timeout = float(conf.get("timeout", 30))
        self._retries = int(conf.get("max.retries", 3))
        self._wait = int(conf.get("retries.wait.ms", 1000)) / 1000
        self._max_wait = int(conf.get("retries.max.wait.ms", 20000)) / 1000
        if transport is None:
            transport = _urllib_transport(self._ssl_context(conf))
        self._send = transport
        self._clock = clock
        capacity = int(conf.get("cache.capacity", 1000))
        self._latest_ttl = conf.get("cache.latest.ttl.sec")
        self._lock = threading.Lock()
        self._by_id: dict[int, Schema] = {}          # ids never change meaning: kept
        self._ids = _LRU(capacity)                   # (subject, schema) -> RegisteredSchema
        self._versions = _LRU(capacity)              # (subject, version) -> RegisteredSchema
        self._latest: dict[str, tuple[float, RegisteredSchema]] = {}

    @staticmethod
    def _ssl_context(conf):
        if not any(conf.get(k) for k in ("ssl.ca.location", "ssl.certificate.location")):
            return None
        ctx = ssl.create_default_context(cafile=conf.get("ssl.ca.location"))
        if conf.get("ssl.certificate.location"):
            ctx.load_cert_chain(conf["ssl.certificate.location"], conf.get("ssl.key.location"),
                                conf.get("ssl.key.password"))
        if str(conf.get("ssl.check.hostname", True)).lower() in ("false", "0"):
            ctx.check_hostname = False
        return ctx

    # -- transport ---------------------------------------------------------------------------
    def _request(self, method: str, path: str, body=None, query: dict | None = None):
        query = {k: (str(v).lower() if isinstance(v, bool) else v)
                 for k, v in (query or {}).items() if v is not None}
        if query:
            path += "?" + urllib.parse.urlencode(query)
        headers = {"Accept": ACCEPT}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = CONTENT_TYPE
        if self._auth is not None:
            token = base64.b64encode(f"{self._auth[0]}:{self._auth[1]}".encode()).decode()
            headers["Authorization"] = f"Basic {token}"
        last = None
        for attempt in range(self._retries + 1):
            for base in self._urls:
                try:
                    status, raw = self._send(method, base + path, data, headers, self._timeout)
                except OSError as e:          # refused, reset, timed out: try the next url
                    last = SchemaRegistryError(-1, -1, f"{method} {base}{path}: {e}")
                    continue
                if status not in RETRIABLE:
                    return self._reply(status, raw, method, path)
                last = self._reply_error(status, raw)
                break
            if attempt < self._retries:
                time.sleep(min(self._max_wait, self._wait * 2 ** attempt) * random.random())
        raise last

    @staticmethod
    def _reply_error(status, raw):
        try:
            err = json.loads(raw)
            return error_for(status, int(err["error_code"]), str(err.get("message", "")))
        except Exception:
            text = raw[:200].decode("utf-8", "replace") if raw else ""
            return error_for(status, -1, f"unexpected reply: {text!r}")

    def _reply(self, status, raw, method, path):
        if len(raw) > MAX_REPLY_BYTES:
            raise SchemaRegistryError(status, -1, f"{method} {path}: reply over "
                                                  f"{MAX_REPLY_BYTES} bytes refused")
        if status >= 400:
            raise self._reply_error(status, raw)
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError as e:
            raise SchemaRegistryError(status, -1, f"{method} {path}: reply is not JSON: "
                                                  f"{e}") from None

    # -- schemas -----------------------------------------------------------------------------
    def register_schema(self, subject_name: str, schema: Schema,
                        normalize_schemas: bool = False) -> int:
        """The schema's global id, registering it under the subject when it is new."""
        return self.register_schema_full_response(subject_name, schema,
                                                  normalize_schemas).schema_id

    def register_schema_full_response(self, subject_name: str, schema: Schema,
                                      normalize_schemas: bool = False) -> RegisteredSchema:
        key = (subject_name, schema, normalize_schemas)
        got = self._ids.get(key)
        if got is not None:
            return got
        reply = self._request("POST", f"/subjects/{_q(subject_name)}/versions",
                              schema.to_dict(), {"normalize": normalize_schemas})
        reg = RegisteredSchema(int(reply["id"]), schema, subject_name,
                               int(reply.get("version", 0) or 0))
        with self._lock:
            self._ids.put(key, reg)
            self._by_id.setdefault(reg.schema_id, schema)
        return reg

    def get_schema(self, schema_id: int, subject_name: str | None = None,
                   fmt: str | None = None) -> Schema:
        """The schema with that global id (cached for the life of the client)."""
        key = (schema_id, fmt)
        got = self._by_id.get(schema_id) if fmt is None else self._by_id.get(key)
        if got is not None:
            return got
        reply = self._request("GET", f"/schemas/ids/{int(schema_id)}",
                              query={"subject": subject_name, "format": fmt})
        schema = Schema.from_dict(reply)
        with self._lock:
            if fmt is None:
                self._by_id[schema_id] = schema
            else:
                self._by_id[key] = schema
        return schema

    def lookup_schema(self, subject_name: str, schema: Schema, normalize_schemas: bool = False,
                      deleted: bool = False) -> RegisteredSchema:
        """The subject's version holding this schema; SchemaNotFoundError when it has none."""
        key = ("lookup", subject_name, schema, normalize_schemas)
        got = self._ids.get(key)
        if got is not None:
            return got
        reply = self._request("POST", f"/subjects/{_q(subject_name)}", schema.to_dict(),
                              {"normalize": normalize_schemas, "deleted": deleted})
        reg = RegisteredSchema.from_dict(reply, subject_name)
        with self._lock:
            self._ids.put(key, reg)
        return reg

    def get_latest_version(self, subject_name: str, fmt: str | None = None) -> RegisteredSchema:
        """The subject's latest version, cached for cache.latest.ttl.sec (forever when unset,
        as confluent-kafka does)."""
        now = self._clock()
        got = self._latest.get((subject_name, fmt))
        if got is not None and (self._latest_ttl is None or now - got[0] < float(self._latest_ttl)):
            return got[1]
        reg = self._version(subject_name, "latest", False, fmt)
        self._latest[(subject_name, fmt)] = (now, reg)
        return reg

    def get_version(self, subject_name: str, version: int | str, deleted: bool = False,
                    fmt: str | None = None) -> RegisteredSchema:
        key = (subject_name, version, deleted, fmt)
        got = self._versions.get(key)
        if got is not None:
            return got
        reg = self._version(subject_name, version, deleted, fmt)
        if version not in ("latest", -1):
            with self._lock:
                self._versions.put(key, reg)
        return reg

    def _version(self, subject, version, deleted, fmt):
        reply = self._request("GET", f"/subjects/{_q(subject)}/versions/{version}",
                              query={"deleted": deleted or None, "format": fmt})
        reg = RegisteredSchema.from_dict(reply, subject)
        with self._lock:
            if fmt is None:
                self._by_id.setdefault(reg.schema_id, reg.schema)
        return reg

    def get_subjects(self, deleted: bool = False) -> list[str]:
        return self._request("GET", "/subjects", query={"deleted": deleted or None})

    def get_versions(self, subject_name: str, deleted: bool = False) -> list[int]:
        return self._request("GET", f"/subjects/{_q(subject_name)}/versions",
                             query={"deleted": deleted or None})

    def delete_subject(self, subject_name: str, permanent: bool = False) -> list[int]:
        out = self._request("DELETE", f"/subjects/{_q(subject_name)}",
                            query={"permanent": permanent or None})
        self._forget(subject_name)
        return out

    def delete_version(self, subject_name: str, version: int, permanent: bool = False) -> int:
        out = self._request("DELETE", f"/subjects/{_q(subject_name)}/versions/{version}",
                            query={"permanent": permanent or None})
        self._forget(subject_name)
        return out

    def _forget(self, subject):
        with self._lock:
            self._latest = {k: v for k, v in self._latest.items() if k[0] != subject}
            self._ids.pop_where(lambda k: subject in k[:2])
            self._versions.pop_where(lambda k: k[0] == subject)

    def test_compatibility(self, subject_name: str, schema: Schema,
                           version: int | str = "latest") -> bool:
        reply = self._request("POST", f"/compatibility/subjects/{_q(subject_name)}/versions/"
                                      f"{version}", schema.to_dict())
        return bool(reply["is_compatible"])

    def get_compatibility(self, subject_name: str | None = None) -> str:
        path = "/config" if subject_name is None else f"/config/{_q(subject_name)}"
        return self._request("GET", path)["compatibilityLevel"]

    def set_compatibility(self, subject_name: str | None = None, level: str | None = None) -> str:
        path = "/config" if subject_name is None else f"/config/{_q(subject_name)}"
        return self._request("PUT", path, {"compatibility": str(level).upper()})["compatibility"]

    def clear_latest_caches(self) -> None:
        self._latest.clear()

    def close(self) -> None:
        """Nothing to release (urllib opens a connection per request); for symmetry."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _q(s: str) -> str:
    return urllib.parse.quote(s, safe="")
