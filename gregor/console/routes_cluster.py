"""Cluster and topic pages: `/`, `/topics`, `/topics/{name}`, and the topic changes (create,
delete, add partitions, alter configs); also /api/health and the token login."""
from __future__ import annotations

import hmac

from starlette.responses import JSONResponse, RedirectResponse

from .render import done, failed, read_change, respond
from .security import AUTH_COOKIE, cookie, csrf_ok, token_cookie_value


def _console(request):
    return request.app.state.console


async def cluster(request):
    return respond(request, "cluster.html", await _console(request).cluster.cluster())


async def topics(request):
    return respond(request, "topics.html", await _console(request).cluster.topics())


async def topic(request):
    c = _console(request)
    name = request.path_params["name"]
    data = await c.cluster.topic(name)
    data["groups"] = await c.groups.groups_of_topic(name)
    return respond(request, "topic.html", data)


def _int(data: dict, key: str, default=None, *, minimum: int | None = None) -> int:
    raw = data.get(key, default)
    if raw in (None, ""):
        if default is None:
            raise ValueError(f"{key} is required")
        raw = default
    try:
        v = int(raw)
    except (TypeError, ValueError):
        raise ValueError(f"{key} must be a whole number, got {raw!r}") from None
    if minimum is not None and v < minimum:
        raise ValueError(f"{key} must be at least {minimum}, got {v}")
    return v


def _configs(text) -> dict:
    """'a=1\\nb=2' (or a dict) -> {'a': '1', 'b': '2'}; 'a=' resets a to its default."""
    if isinstance(text, dict):
        return {str(k): (None if v is None else str(v)) for k, v in text.items()}
    out = {}
    for line in str(text or "").splitlines():
        if not line.strip():
            continue
        k, sep, v = line.partition("=")
        if not sep or not k.strip():
            raise ValueError(f"config line {line!r}: expected NAME=VALUE")
        out[k.strip()] = v.strip() or None
    return out


async def create_topic(request):
    data = await read_change(request)
    name = str(data.get("name", "")).strip()
    try:
        if not name:
            raise ValueError("the topic needs a name")
        await _console(request).cluster.create_topic(
            name, _int(data, "partitions", 1, minimum=1),
            _int(data, "replication_factor", -1), _configs(data.get("configs")))
    except Exception as e:
        return failed(request, "/topics", e)
    return done(request, f"/topics/{name}", f"Created topic {name}.")


async def delete_topic(request):
    name = request.path_params["name"]
    data = await read_change(request)
    if str(data.get("confirm", "")).strip() != name:
        return failed(request, f"/topics/{name}",
                      ValueError(f"type the topic's name ({name}) to confirm its deletion"))
    try:
        await _console(request).cluster.delete_topic(name)
    except Exception as e:
        return failed(request, f"/topics/{name}", e)
    return done(request, "/topics", f"Deleted topic {name}.")


async def add_partitions(request):
    name = request.path_params["name"]
    data = await read_change(request)
    try:
        total = _int(data, "total", None, minimum=1)
        await _console(request).cluster.add_partitions(name, total)
    except Exception as e:
        return failed(request, f"/topics/{name}", e)
    return done(request, f"/topics/{name}", f"Topic {name} now has {total} partitions.")


async def alter_configs(request):
    name = request.path_params["name"]
    data = await read_change(request)
    try:
        changes = _configs(data.get("configs"))
        if not changes:
            raise ValueError("no config given: write NAME=VALUE lines (NAME= resets one)")
        await _console(request).cluster.alter_configs(name, changes)
    except Exception as e:
        return failed(request, f"/topics/{name}", e)
    return done(request, f"/topics/{name}",
                f"Changed {', '.join(sorted(changes))} of topic {name}.")


async def health(request):
    return JSONResponse(await _console(request).cluster.health_check())


async def login_page(request):
    return respond(request, "login.html", {"next": request.query_params.get("next", "/")})


async def login(request):
    c = _console(request)
    form = await request.form()
    nxt = str(form.get("next") or "/")
    if not nxt.startswith("/") or nxt.startswith("//"):
        nxt = "/"                         # never an open redirect
    if not csrf_ok(request, form.get("csrf")):
        return RedirectResponse("/login?error=reload+the+page+and+try+again", 303)
    token = str(form.get("token") or "")
    if not c.settings.token or not hmac.compare_digest(token.encode(),
                                                       c.settings.token.encode()):
        return RedirectResponse("/login?error=wrong+token&next=" + nxt, 303)
    resp = RedirectResponse(nxt, 303)
    resp.headers.append("set-cookie", cookie(AUTH_COOKIE, token_cookie_value(token)))
    return resp


async def logout(request):
    resp = RedirectResponse("/login", 303)
    resp.headers.append("set-cookie", cookie(AUTH_COOKIE, "", max_age=0))
    return resp


# (path, endpoint, methods): each is served as HTML at path and as JSON under /api/.
ROUTES = [
    ("/", cluster, ["GET"]),
    ("/topics", topics, ["GET"]),
    ("/topics", create_topic, ["POST"]),
    ("/topics/{name}", topic, ["GET"]),
    ("/topics/{name}/delete", delete_topic, ["POST"]),
    ("/topics/{name}/partitions", add_partitions, ["POST"]),
    ("/topics/{name}/configs", alter_configs, ["POST"]),
]
PLAIN_ROUTES = [
    ("/api/health", health, ["GET"]),
    ("/login", login_page, ["GET"]),
    ("/login", login, ["POST"]),
    ("/logout", logout, ["POST"]),
]
