"""Consumer group and transaction pages: `/groups`, `/groups/{id}` (lag, time lag, the lag
chart), the reset dry run (a GET: it changes nothing) and its execution, deletion, and
`/transactions`."""
from __future__ import annotations

from markupsafe import Markup
from starlette.responses import Response

from ..protocol.errors import ErrorCode, KafkaError
from .charts import line_chart, sparkline
from .groups_model import ResetRefused
from .render import done, failed, read_change, respond


def _console(request):
    return request.app.state.console


async def groups(request):
    data = await _console(request).groups.groups()
    if not request.url.path.startswith("/api"):
        for g in data["groups"]:
            g["spark"] = Markup(sparkline(g["history"]))      # drawn here, numbers only
    return respond(request, "groups.html", data)


async def group(request):
    c = _console(request)
    gid = request.path_params["gid"]
    share = c.groups.is_share(gid)
    if not share:
        try:
            data = await c.groups.group(gid)
        except KafkaError as e:
            # DescribeGroups does not know share groups (KIP-932 has ShareGroupDescribe):
            # a group the sampler has not listed yet may still be one.
            if e.code != ErrorCode.GROUP_ID_NOT_FOUND:
                raise
            share = True
    if share:
        data = await c.groups.share_group(gid)
    data["history"] = [[t, v] for t, v in data["history"]]
    data["interval_s"] = c.settings.lag_interval_s
    return respond(request, "share_group.html" if share else "group.html", data)


async def lag_chart(request):
    c = _console(request)
    gid = request.path_params["gid"]
    svg = line_chart(c.sampler.series(gid), title=f"lag of {gid}")
    return Response(svg, media_type="image/svg+xml")


async def reset_dry_run(request):
    c = _console(request)
    gid = request.path_params["gid"]
    p = request.query_params
    try:
        plan = await c.groups.reset_plan(gid, p.get("strategy", ""), p.get("value"),
                                         p.get("topic") or None, execute=False)
    except ResetRefused as e:
        return respond(request, "reset.html", {"group_id": gid, "error": str(e),
                                               "partitions": [], "strategy": p.get("strategy"),
                                               "value": p.get("value"),
                                               "topic": p.get("topic")}, 409)
    return respond(request, "reset.html", plan)


async def reset_execute(request):
    c = _console(request)
    gid = request.path_params["gid"]
    data = await read_change(request)
    try:
        plan = await c.groups.reset_plan(gid, str(data.get("strategy", "")),
                                         data.get("value"), data.get("topic") or None,
                                         execute=True)
    except Exception as e:
        return failed(request, f"/groups/{gid}", e, 409 if isinstance(e, ResetRefused)
                      else 400)
    return done(request, f"/groups/{gid}",
                f"Reset {len(plan['partitions'])} partition(s) of group {gid}.", plan)


async def delete_group(request):
    c = _console(request)
    gid = request.path_params["gid"]
    data = await read_change(request)
    if str(data.get("confirm", "")).strip() != gid:
        return failed(request, f"/groups/{gid}",
                      ValueError(f"type the group's id ({gid}) to confirm its deletion"))
    try:
        await c.groups.delete(gid)
    except Exception as e:
        return failed(request, f"/groups/{gid}", e)
    return done(request, "/groups", f"Deleted group {gid}.")


async def transactions(request):
    topic = (request.query_params.get("topic") or "").strip() or None
    return respond(request, "transactions.html",
                   await _console(request).transactions.transactions(topic))


ROUTES = [
    ("/groups", groups, ["GET"]),
    ("/groups/{gid}", group, ["GET"]),
    ("/groups/{gid}/lag.svg", lag_chart, ["GET"]),
    ("/groups/{gid}/reset", reset_dry_run, ["GET"]),
    ("/groups/{gid}/reset", reset_execute, ["POST"]),
    ("/groups/{gid}/delete", delete_group, ["POST"]),
    ("/transactions", transactions, ["GET"]),
]
