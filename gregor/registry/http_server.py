"""A small HTTP/1.1 server on asyncio, with h11 doing the protocol (sans-I/O).

Why h11 and not uvicorn + starlette: the registry runs inside the broker's own event loop when
embedded, and uvicorn wants to own a loop and its signals; h11 is one small pure-Python
package (already a dependency of httpx and uvicorn), parses and frames HTTP/1.1 strictly, and
leaves every limit to us: headers are capped by h11's max_incomplete_event_size, a body is
refused from its Content-Length (413) before it is read, and a chunked body is counted as it
arrives, so nothing larger than what was received is ever allocated.

`serve(handler, host, port, ...)` returns the asyncio server; `handler(Request) -> Response` is
awaited per request. Optional HTTP basic auth (`users`: name -> (password, roles)) and TLS
(`ssl_context`) apply to every request.
"""
from __future__ import annotations

import asyncio
import base64
import hmac
import json
import logging
from dataclasses import dataclass, field
from urllib.parse import parse_qs

import h11

log = logging.getLogger(__name__)

MAX_HEADER_BYTES = 64 * 1024       # request line + headers; h11 refuses more (431/400)
DEFAULT_MAX_BODY = 16 * 1024 * 1024  # a schema request body; more is answered 413
READ_CHUNK = 64 * 1024
IDLE_TIMEOUT_S = 300.0             # an idle keep-alive connection is closed after this


@dataclass
class Request:
    method: str
    raw_path: str
    query: dict
    headers: dict
    body: bytes
    user: str | None = None
    roles: tuple = ()

    def header(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name.lower(), default)


@dataclass
class Response:
    status: int
    body: bytes = b""
    headers: list = field(default_factory=list)
    content_type: str = "application/vnd.schemaregistry.v1+json"


def json_response(status: int, value, content_type=None) -> Response:
    body = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    r = Response(status, body)
    if content_type:
        r.content_type = content_type
    return r


def error_response(status: int, code: int, message: str) -> Response:
    return json_response(status, {"error_code": code, "message": message})


def _decode_headers(headers) -> dict:
    out: dict[str, str] = {}
    for name, value in headers:
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        out[key] = f"{out[key]}, {text}" if key in out else text
    return out


def check_basic_auth(header: str | None, users: dict):
    """(user, roles) for a valid `Authorization: Basic` header, else None."""
    if not header or not header[:6].lower() == "basic ":
        return None
    try:
        name, _, password = base64.b64decode(header[6:].strip(), validate=True) \
            .decode("utf-8").partition(":")
    except (ValueError, UnicodeDecodeError):
        return None
    entry = users.get(name)
    if entry is None or not hmac.compare_digest(entry[0].encode(), password.encode()):
        return None
    return name, tuple(entry[1])


class _Connection:
    def __init__(self, handler, reader, writer, max_body, users, realm):
        self.handler, self.reader, self.writer = handler, reader, writer
        self.max_body, self.users, self.realm = max_body, users, realm
        self.conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEADER_BYTES)

    async def _send(self, *events) -> None:
        for ev in events:
            if ev is None:
                continue
            data = self.conn.send(ev)
            if data:
                self.writer.write(data)
        await self.writer.drain()

    async def _respond(self, resp: Response, close: bool = False) -> None:
        headers = [("content-type", resp.content_type), ("content-length", str(len(resp.body))),
                   *resp.headers]
        if close:
            headers.append(("connection", "close"))
        await self._send(h11.Response(status_code=resp.status, headers=headers),
                         h11.Data(data=resp.body) if resp.body else None,
                         h11.EndOfMessage())

    async def _next_event(self):
        while True:
            ev = self.conn.next_event()
            if ev is not h11.NEED_DATA:
                return ev
            data = await asyncio.wait_for(self.reader.read(READ_CHUNK), IDLE_TIMEOUT_S)
            self.conn.receive_data(data)

    async def run(self) -> None:
        try:
            while True:
                ev = await self._next_event()
                if isinstance(ev, h11.ConnectionClosed):
                    return
                if not isinstance(ev, h11.Request):
                    return
                if not await self._one(ev):
                    return
                if self.conn.our_state is h11.MUST_CLOSE:
                    return
                self.conn.start_next_cycle()
        except h11.RemoteProtocolError as e:
            if self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                try:
                    await self._respond(error_response(e.error_status_hint, e.error_status_hint,
                                                       f"bad HTTP request: {e}"), close=True)
                except Exception:
                    pass
        except (asyncio.TimeoutError, ConnectionError, h11.LocalProtocolError):
            pass
        finally:
            self.writer.close()

    async def _one(self, req: h11.Request) -> bool:
        headers = _decode_headers(req.headers)
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            await self._respond(error_response(
                413, 413, f"request body of {length} bytes is larger than the "
                          f"{self.max_body} bytes this registry takes"), close=True)
            return False
        body = bytearray()
        while True:
            ev = await self._next_event()
            if isinstance(ev, h11.Data):
                if len(body) + len(ev.data) > self.max_body:
                    await self._respond(error_response(
                        413, 413, f"request body larger than the {self.max_body} bytes this "
                                  "registry takes"), close=True)
                    return False
                body += ev.data
            elif isinstance(ev, h11.EndOfMessage):
                break
            else:
                return False
        target = req.target.decode("latin-1")
        raw_path, _, qs = target.partition("?")
        request = Request(req.method.decode("ascii").upper(), raw_path,
                          parse_qs(qs, keep_blank_values=True), headers, bytes(body))
        if self.users is not None:
            who = check_basic_auth(headers.get("authorization"), self.users)
            if who is None:
                resp = error_response(401, 401, "Unauthorized: this registry needs HTTP basic "
                                                "authentication")
                resp.headers.append(("www-authenticate", f'Basic realm="{self.realm}"'))
                await self._respond(resp)
                return True
            request.user, request.roles = who
        try:
            resp = await self.handler(request)
        except Exception:
            log.exception("schema registry request %s %s failed", request.method, raw_path)
            resp = error_response(500, 500, "internal error (see the registry's log)")
        await self._respond(resp)
        return True


class HttpServer:
    """The listening socket and its open connections; close() ends both."""

    def __init__(self):
        self.server: asyncio.base_events.Server | None = None
        self.tasks: set[asyncio.Task] = set()

    @property
    def sockets(self):
        return self.server.sockets

    def close(self) -> None:
        self.server.close()
        for t in list(self.tasks):
            t.cancel()

    async def wait_closed(self) -> None:
        if self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.server.wait_closed()


async def serve(handler, host: str, port: int, *, ssl_context=None,
                max_body: int = DEFAULT_MAX_BODY, users: dict | None = None,
                realm: str = "SchemaRegistry") -> HttpServer:
    http = HttpServer()

    async def on_connect(reader, writer):
        task = asyncio.current_task()
        http.tasks.add(task)
        try:
            await _Connection(handler, reader, writer, max_body, users, realm).run()
        except asyncio.CancelledError:
            writer.close()              # the server is stopping: end quietly
        finally:
            http.tasks.discard(task)
    http.server = await asyncio.start_server(on_connect, host, port, ssl=ssl_context,
                                             limit=READ_CHUNK)
    return http
