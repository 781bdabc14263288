"""One page, two forms: HTML from a template for people, the same data as JSON under /api/ for
scripts. Also the helpers every route shares: reading a change's input (form or JSON) behind
the CSRF check, redirects with a message, and errors that say what happened.

Templates autoescape everything (a record value `<script>` shows as text); nothing is marked
safe except the SVG charts this package draws itself.
"""
from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote, urlencode

import jinja2
from starlette.exceptions import HTTPException
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse

from ..client.errors import ClientError
from ..protocol.errors import ErrorCode, KafkaError
from .security import CSRF_FIELD, csrf_ok
from .workers import UNREACHABLE

TEMPLATES = Path(__file__).parent / "templates"
_NOT_FOUND = {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.GROUP_ID_NOT_FOUND,
              ErrorCode.TRANSACTIONAL_ID_NOT_FOUND}


def _duration(ms) -> str:
    if ms is None:
        return "-"
    s = ms / 1000
    if s < 1:
        return f"{ms:.0f} ms"
    if s < 120:
        return f"{s:.1f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    if s < 172800:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} d"


def _size(n) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def make_env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True)
    env.filters["duration"] = _duration
    env.filters["size"] = _size
    env.filters["num"] = lambda n: "-" if n is None else f"{n:,}"
    env.filters["q"] = lambda s: quote(str(s), safe="")
    env.globals["urlencode"] = lambda d: urlencode({k: v for k, v in d.items()
                                                    if v not in (None, "")})
    return env


def is_api(request) -> bool:
    return request.url.path.startswith("/api/") or request.url.path == "/api"


def _jsonable(v):
    if isinstance(v, dict):
        return {(k if isinstance(k, str) else "-".join(map(str, k)) if isinstance(k, tuple)
                 else str(k)): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v


def respond(request, template: str, data: dict, status: int = 200):
    if is_api(request):
        return JSONResponse(_jsonable(data), status_code=status)
    app = request.app.state.console
    ctx = {"request": request, "data": data, "settings": app.settings,
           "read_only": app.settings.read_only, "csrf": request.scope["state"]["csrf"],
           "health": app.pool.health.as_dict(), "csrf_field": CSRF_FIELD,
           "msg": request.query_params.get("msg"), "err": request.query_params.get("error"),
           "auth": bool(app.settings.token)}
    html = app.env.get_template(template).render(ctx)
    return HTMLResponse(html, status_code=status)


async def read_change(request) -> dict:
    """The input of a change (form fields or a JSON object), after the CSRF check."""
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            data = json.loads(await request.body() or b"{}")
        except ValueError:
            raise HTTPException(400, "the body is not valid JSON") from None
        if not isinstance(data, dict):
            raise HTTPException(400, "the body must be a JSON object")
    else:
        form = await request.form()
        data = {k: form.getlist(k)[-1] if len(form.getlist(k)) == 1 else form.getlist(k)
                for k in form.keys()}
    if not csrf_ok(request, data.pop(CSRF_FIELD, None) if isinstance(
            data.get(CSRF_FIELD), str) else None):
        raise HTTPException(403, "missing or wrong CSRF token: reload the page and try again "
                                 "(scripts: send Authorization: Bearer TOKEN or the "
                                 "X-CSRF-Token header with the csrf cookie)")
    return data


def done(request, location: str, message: str, data: dict | None = None):
    """After a change: JSON for the API, else back to a page with the message shown."""
    if is_api(request):
        return JSONResponse(_jsonable({"ok": True, "message": message, **(data or {})}))
    sep = "&" if "?" in location else "?"
    return RedirectResponse(f"{location}{sep}{urlencode({'msg': message})}", status_code=303)


def failed(request, location: str, err: Exception, status: int = 400):
    if is_api(request):
        return JSONResponse({"ok": False, "error": str(err)}, status_code=status)
    sep = "&" if "?" in location else "?"
    return RedirectResponse(f"{location}{sep}{urlencode({'error': str(err)})}", status_code=303)


def error_status(err: Exception) -> int:
    if isinstance(err, UNREACHABLE):
        return 503
    if isinstance(err, KafkaError) and err.code in _NOT_FOUND:
        return 404
    if isinstance(err, (KafkaError, ClientError, ValueError)):
        return 400
    return 500


async def error_page(request, err: Exception):
    status = error_status(err)
    if isinstance(err, HTTPException):
        status = err.status_code
        message = err.detail
    elif status == 503:
        message = f"The broker cannot be reached: {err}"
    else:
        message = str(err) or type(err).__name__
    return respond(request, "error.html", {"error": message, "status": status}, status)
