"""The console's guards, in one ASGI middleware plus a check every change route calls:

- Host check: a console bound to loopback answers only requests naming a loopback host (a web
  page cannot reach it through DNS rebinding).
- Token (--token): every page and API call needs `Authorization: Bearer TOKEN` or the cookie
  that POST /login sets from it (compared in constant time); /static/ and /login are open.
- Read-only (--read-only): every POST/PUT/PATCH/DELETE except /login and /logout is refused
  with 403 (and the templates show no buttons).
- CSRF: each browser gets a random token in a cookie (SameSite=Strict, HttpOnly); every change
  must send it back (form field `csrf` or header `X-CSRF-Token`). A request carrying the bearer
  token needs none: a cross-site page cannot set that header.
- Headers: a Content-Security-Policy without inline scripts or styles, no framing, no sniffing,
  no referrer.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from http.cookies import SimpleCookie
from urllib.parse import quote

AUTH_COOKIE = "gregor_console_auth"
CSRF_COOKIE = "gregor_console_csrf"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"
UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}
OPEN_PATHS = ("/login", "/logout")
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
_HEADERS = [(b"content-security-policy", CSP.encode()),
            (b"x-content-type-options", b"nosniff"), (b"x-frame-options", b"DENY"),
            (b"referrer-policy", b"no-referrer"), (b"cache-control", b"no-store")]
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}


def token_cookie_value(token: str) -> str:
    """What the auth cookie holds: a digest of the token, not the token itself."""
    return hashlib.sha256(b"gregor-console-auth:" + token.encode()).hexdigest()


def _cookies(scope) -> dict[str, str]:
    jar = SimpleCookie()
    for k, v in scope.get("headers", ()):
        if k == b"cookie":
            try:
                jar.load(v.decode("latin-1"))
            except Exception:
                continue
    return {k: m.value for k, m in jar.items()}


def _header(scope, name: bytes) -> str | None:
    for k, v in scope.get("headers", ()):
        if k == name:
            return v.decode("latin-1")
    return None


def host_only(host_header: str) -> str:
    """The host of a Host header, without the port ("[::1]:8080" -> "[::1]")."""
    if host_header.startswith("["):
        return host_header.split("]", 1)[0] + "]"
    return host_header.rsplit(":", 1)[0]


def bearer_ok(scope, token: str | None) -> bool:
    if not token:
        return False
    auth = _header(scope, b"authorization") or ""
    scheme, _, value = auth.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(),
                                                              token.encode())


def cookie(name: str, value: str, *, max_age: int | None = None) -> str:
    parts = [f"{name}={value}", "Path=/", "HttpOnly", "SameSite=Strict"]
    if max_age is not None:
        parts.append(f"Max-Age={max_age}")
    return "; ".join(parts)


class SecurityMiddleware:
    def __init__(self, app, settings, allowed_hosts: set[str] | None = None):
        self.app = app
        self.settings = settings
        self.allowed_hosts = allowed_hosts

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope["path"]
        method = scope["method"]
        is_api = path.startswith("/api/") or path == "/api"
        if self.allowed_hosts is not None:
            host = host_only(_header(scope, b"host") or "")
            if host not in self.allowed_hosts:
                return await _plain(send, 421, f"host {host!r} is not served here; use "
                                               "http://127.0.0.1 or http://localhost")
        cookies = _cookies(scope)
        bearer = bearer_ok(scope, self.settings.token)
        state = scope.setdefault("state", {})
        state["bearer"] = bearer
        state["authenticated"] = True
        if self.settings.token and not bearer:
            expected = token_cookie_value(self.settings.token)
            has_cookie = hmac.compare_digest(cookies.get(AUTH_COOKIE, "").encode(),
                                             expected.encode())
            state["authenticated"] = has_cookie
            if not has_cookie and not path.startswith("/static/") and path not in OPEN_PATHS:
                if is_api or method != "GET":
                    return await _json(send, 401, {"error": "this console needs a token: send "
                                                   "Authorization: Bearer TOKEN or log in"})
                return await _redirect(send, "/login?next=" + quote(path, safe="/"))
        if self.settings.read_only and method in UNSAFE and path not in OPEN_PATHS:
            return await _json(send, 403, {"error": "this console is read-only "
                                                    "(--read-only): changes are refused"}) \
                if is_api else await _plain(send, 403, "This console is read-only "
                                                       "(--read-only): changes are refused.")
        csrf = cookies.get(CSRF_COOKIE)
        new_csrf = None
        if not csrf or len(csrf) != 43:
            csrf = new_csrf = secrets.token_urlsafe(32)
        state["csrf"] = csrf

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                have = {k.lower() for k, _ in headers}
                headers += [(k, v) for k, v in _HEADERS if k not in have]
                if new_csrf is not None:
                    headers.append((b"set-cookie", cookie(CSRF_COOKIE, new_csrf).encode()))
                message = dict(message, headers=headers)
            await send(message)
        return await self.app(scope, receive, send_with_headers)


def csrf_ok(request, sent: str | None) -> bool:
    """Whether a change request may go ahead: bearer-authenticated, or it sent back the
    browser's CSRF token."""
    if request.scope.get("state", {}).get("bearer"):
        return True
    sent = sent or request.headers.get(CSRF_HEADER)
    expected = request.cookies.get(CSRF_COOKIE)
    return bool(sent and expected) and hmac.compare_digest(sent.encode(), expected.encode())


async def _respond(send, status: int, body: bytes, ctype: bytes, extra=()):
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", ctype),
                            (b"content-length", str(len(body)).encode()), *_HEADERS, *extra]})
    await send({"type": "http.response.body", "body": body})


async def _json(send, status: int, data: dict):
    await _respond(send, status, json.dumps(data).encode(), b"application/json")


async def _plain(send, status: int, text: str):
    await _respond(send, status, text.encode(), b"text/plain; charset=utf-8")


async def _redirect(send, location: str):
    await _respond(send, 303, b"", b"text/plain", [(b"location", location.encode())])
