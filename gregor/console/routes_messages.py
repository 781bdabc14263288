"""Message pages: browse and search (`/topics/{name}/messages`), one record with its full value
in three views, export of what a page shows, the live tail (SSE), produce and re-produce.

A search holds one of a few search threads; while it runs the route watches the connection and
cancels the scan when the browser goes away, so an abandoned search stops costing anything.
"""
from __future__ import annotations

import asyncio
import base64
import json
import threading

from starlette.exceptions import HTTPException
from starlette.responses import Response, StreamingResponse

from . import records as rec
from .browse import NEWEST, OLDEST, BrowseQuery, browse, one_record
from .groups_model import parse_timestamp
from .render import done, failed, read_change, respond
from .search import FIELDS, SearchError, SearchQuery, compile_pattern, search
from .tail import tail_events

_WATCH_S = 0.25      # how often a running search checks that its client is still there


def _console(request):
    return request.app.state.console


def _opt_int(params, key: str):
    raw = (params.get(key) or "").strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise HTTPException(400, f"{key} must be a whole number, got {raw!r}") from None


async def _query(request) -> tuple[BrowseQuery | SearchQuery, dict]:
    c = _console(request)
    s = c.settings
    p = request.query_params
    name = request.path_params["name"]
    all_parts = await c.cluster.partitions_of(name)
    partition = _opt_int(p, "partition")
    if partition is not None and partition not in all_parts:
        raise HTTPException(400, f"topic {name!r} has no partition {partition} (it has "
                                 f"{len(all_parts)})")
    parts = [partition] if partition is not None else all_parts
    order = p.get("order") or NEWEST
    if order not in (NEWEST, OLDEST):
        raise HTTPException(400, "order must be newest or oldest")
    ts_text = (p.get("timestamp") or "").strip()
    try:
        ts = parse_timestamp(ts_text) if ts_text else None
    except ValueError as e:
        raise HTTPException(400, str(e)) from None
    limit = min(max(1, _opt_int(p, "limit") or 50), s.browse_max)
    form = {"partition": "" if partition is None else partition, "order": order,
            "offset": p.get("offset") or "", "timestamp": ts_text, "limit": limit,
            "q": p.get("q") or "", "view": p.get("view") or "text",
            "fields": p.getlist("fields") or list(FIELDS),
            "scan": _opt_int(p, "scan") or s.search_scan_default,
            "budget": p.get("budget") or s.search_budget_default_s}
    if form["view"] not in rec.VIEWS:
        raise HTTPException(400, f"view must be one of {', '.join(rec.VIEWS)}")
    if not form["q"]:
        return BrowseQuery(name, parts, order, _opt_int(p, "offset"), ts, limit), form
    try:
        budget = min(float(form["budget"]), s.search_budget_max_s)
    except ValueError:
        raise HTTPException(400, "budget must be a number of seconds") from None
    scan = min(max(1, form["scan"]), s.search_scan_max)
    form.update(scan=scan, budget=budget)
    return SearchQuery(name, parts, order, _opt_int(p, "offset"), ts, limit,
                       pattern=form["q"], fields=tuple(form["fields"]), scan_limit=scan,
                       budget_s=budget), form


async def _run_search(request, q: SearchQuery):
    c = _console(request)
    try:
        compile_pattern(q.pattern)
    except SearchError as e:
        raise HTTPException(400, str(e)) from None
    if c.search_slots.locked():
        raise HTTPException(429, f"{c.settings.max_searches} searches are running; wait for "
                                 "one to end (or close its page to cancel it)")
    async with c.search_slots:
        cancel = threading.Event()
        kw = {"decoder": c.decoder} if c.decoder is not None else {}
        task = asyncio.ensure_future(c.search_pool.run(search, c.settings, q, cancel, **kw))
        try:
            while True:
                finished, _ = await asyncio.wait({task}, timeout=_WATCH_S)
                if finished:
                    return task.result()
                if await request.is_disconnected():
                    cancel.set()
                    break
            return await task
        finally:
            cancel.set()


async def _records(request):
    c = _console(request)
    q, form = await _query(request)
    if isinstance(q, SearchQuery):
        res = await _run_search(request, q)
        info = {"scanned": res.scanned, "elapsed_s": round(res.elapsed_s, 3),
                "rate": round(res.rate), "stopped": res.reason, "matches": len(res.records)}
        return res.records, None, info, form
    page = await c.pool.run(browse, c.settings, q, c.settings.request_timeout_s)
    return page["records"], page["watermarks"], None, form


def _rows(records, form, settings, decoder) -> list:
    """The page's rows (blocking: decoding may ask the registry)."""
    rows = []
    for r in records:
        d = rec.summary(r, settings.list_value_chars, decoder)
        if form["view"] != "text" and r.value is not None:
            if d["value_schema"] and form["view"] == "json":
                shown = rec.pretty_json(d["value"].encode()) if not d["value_truncated"] \
                    else d["value"]
            else:
                shown = rec.view(r.value, form["view"])
            d["shown"], d["shown_truncated"] = rec.cut(
                shown if shown is not None else "(not JSON) " + (d["value"] or ""),
                settings.list_value_chars * 4)
        rows.append(d)
    return rows


async def messages(request):
    c = _console(request)
    records, marks, search_info, form = await _records(request)
    if c.decoder is not None:
        rows = await c.pool.run(_rows, records, form, c.settings, c.decoder)
    else:
        rows = _rows(records, form, c.settings, None)
    return respond(request, "messages.html", {
        "topic": request.path_params["name"], "records": rows, "watermarks": marks,
        "search": search_info, "form": form,
        "partitions": await c.cluster.partitions_of(request.path_params["name"]),
        "registry": c.decoder is not None})


async def export(request):
    c = _console(request)
    records, _, _, _ = await _records(request)
    fmt = request.query_params.get("format", "jsonl")
    name = request.path_params["name"]
    if fmt == "csv":
        body, ctype, ext = await c.pool.run(rec.export_csv, records, c.decoder), \
            "text/csv; charset=utf-8", "csv"
    elif fmt == "jsonl":
        body, ctype, ext = await c.pool.run(rec.export_jsonl, records, c.decoder), \
            "application/x-ndjson", "jsonl"
    else:
        raise HTTPException(400, "format must be jsonl or csv")
    safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name)
    return Response(body, media_type=ctype, headers={
        "content-disposition": f'attachment; filename="{safe}.{ext}"'})


async def _one(request):
    c = _console(request)
    name = request.path_params["name"]
    p, o = request.path_params["partition"], request.path_params["offset"]
    r = await c.pool.run(one_record, c.settings, name, p, o, c.settings.request_timeout_s)
    if r is None:
        raise HTTPException(404, f"{name}-{p} has no record at offset {o} (deleted by "
                                 "retention or compaction, or not written yet)")
    return r


async def record(request):
    c = _console(request)
    r = await _one(request)
    view = request.query_params.get("view", "text")
    if view not in rec.VIEWS:
        raise HTTPException(400, f"view must be one of {', '.join(rec.VIEWS)}")
    data = await c.pool.run(rec.full, r, c.decoder)
    shown_value, shown_key = rec.view(r.value, view), rec.view(r.key, view)
    is_json = rec.pretty_json(r.value) is not None
    # A decoded value shows as its JSON in the text and json views; hex stays the bytes.
    if data["value_schema"] and view != "hex":
        shown_value, is_json = json.dumps(data["value"], indent=2, ensure_ascii=False), True
    if data["key_schema"] and view != "hex":
        shown_key = json.dumps(data["key"], indent=2, ensure_ascii=False)
    data.update(view=view, shown_value=shown_value, shown_key=shown_key,
                is_json=is_json, registry=c.decoder is not None,
                value_size=None if r.value is None else len(r.value),
                headers_text=[[k, rec.as_text(v)[0]] for k, v in r.headers])
    return respond(request, "record.html", data)


def _field(data: dict, key: str) -> str:
    v = data.get(key)
    return "" if v is None else str(v).strip()


def _headers(text) -> list:
    if isinstance(text, list):
        return [(str(k), rec.bytes_from_json(v)) for k, v in text]
    out = []
    for line in str(text or "").splitlines():
        if not line.strip():
            continue
        k, sep, v = line.partition("=")
        if not sep or not k.strip():
            raise ValueError(f"header line {line!r}: expected NAME=VALUE")
        out.append((k.strip(), v.encode()))
    return out


def _payload(data: dict, key: str, encoding: str):
    v = data.get(key)
    if v is None or (v == "" and key == "key"):
        return None
    if isinstance(v, dict):
        return rec.bytes_from_json(v)
    if encoding == "base64":
        try:
            return base64.b64decode(str(v), validate=True)
        except ValueError:
            raise ValueError(f"the {key} is not valid base64") from None
    return str(v).encode()


async def produce(request):
    c = _console(request)
    name = request.path_params["name"]
    data = await read_change(request)
    back = f"/topics/{name}/messages"
    try:
        enc = str(data.get("encoding") or "text")
        part = _field(data, "partition")
        md = await c.produce(name, _payload(data, "key", enc), _payload(data, "value", enc),
                             _headers(data.get("headers")), int(part) if part else None)
    except Exception as e:
        return failed(request, back, e)
    return done(request, back, f"Produced to {name}-{md.partition} at offset {md.offset}.",
                {"partition": md.partition, "offset": md.offset})


async def reproduce(request):
    c = _console(request)
    data = await read_change(request)
    r = await _one(request)
    target = str(data.get("topic") or r.topic).strip()
    part = _field(data, "partition")
    back = f"/topics/{r.topic}/messages/{r.partition}/{r.offset}"
    try:
        md = await c.produce(target, r.key, r.value, list(r.headers),
                             int(part) if part else None)
    except Exception as e:
        return failed(request, back, e)
    return done(request, f"/topics/{target}/messages",
                f"Re-produced {r.topic}-{r.partition}@{r.offset} to {target}-{md.partition} "
                f"at offset {md.offset}.", {"partition": md.partition, "offset": md.offset})


async def tail(request):
    c = _console(request)
    name = request.path_params["name"]
    partition = _opt_int(request.query_params, "partition")
    parts = await c.cluster.partitions_of(name)
    if partition is not None:
        if partition not in parts:
            raise HTTPException(400, f"topic {name!r} has no partition {partition}")
        parts = [partition]
    pattern = None
    if request.query_params.get("q"):
        try:
            pattern = compile_pattern(request.query_params["q"])
        except SearchError as e:
            raise HTTPException(400, str(e)) from None
    if c.tail_slots.locked():
        raise HTTPException(429, f"{c.settings.max_tails} live tails are open; close one")
    await c.tail_slots.acquire()

    async def stream():
        try:
            async for chunk in tail_events(c.settings, name, parts,
                                           value_chars=c.settings.list_value_chars,
                                           pattern=pattern,
                                           max_records=_opt_int(request.query_params, "max")):
                yield chunk
        finally:
            c.tail_slots.release()
    return StreamingResponse(stream(), media_type="text/event-stream",
                             headers={"x-accel-buffering": "no"})


ROUTES = [
    ("/topics/{name}/messages", messages, ["GET"]),
    ("/topics/{name}/messages/export", export, ["GET"]),
    ("/topics/{name}/messages/{partition:int}/{offset:int}", record, ["GET"]),
    ("/topics/{name}/messages/{partition:int}/{offset:int}/reproduce", reproduce, ["POST"]),
    ("/topics/{name}/produce", produce, ["POST"]),
    ("/topics/{name}/tail", tail, ["GET"]),
]
