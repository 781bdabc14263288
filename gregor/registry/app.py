"""The registry's request handler: negotiation, authorization, routing, forwarding.

Reads are answered on the event loop from memory; anything that may write, or parse a
schema, runs on a thread so a write waiting for its read-back never blocks the loop (which
is the broker's own when the registry is embedded). On an instance that is not the elected
leader, writes are forwarded to the leader over HTTP, as Confluent's followers do.
"""
from __future__ import annotations

import asyncio
import json
import logging

from . import errors, negotiation
from .http_server import Request, Response, error_response
from .routes import Routes

log = logging.getLogger(__name__)

READONLY_ROLE = "readonly"


class RegistryApp:
    def __init__(self, service, leadership, forwarder=None):
        self.service = service
        self.routes = Routes(service)
        self.leadership = leadership      # .is_leader() and .leader_url()
        self.forwarder = forwarder        # async (Request, url) -> Response

    async def __call__(self, req: Request) -> Response:
        content_type = negotiation.response_type(req.header("accept"))
        if content_type is None:
            return error_response(406, 406, "HTTP 406 Not Acceptable: this registry answers "
                                            f"{', '.join(negotiation.PRODUCES)}")
        try:
            fn, params, writes = self.routes.match(req.method, req.raw_path)
            if req.body and not negotiation.request_type_ok(req.header("content-type")):
                return error_response(415, 415, "HTTP 415 Unsupported Media Type: send "
                                                f"{', '.join(negotiation.CONSUMES)}")
            if writes and req.roles and READONLY_ROLE in req.roles \
                    and len(set(req.roles)) == 1:
                raise errors.RegistryError(403, 40301, f"User {req.user} may only read "
                                                       "(role readonly)")
            if writes and not self.leadership.is_leader():
                if req.header("x-forwarded-by"):
                    # forwarded here by an instance that took us for the leader: no loops
                    raise errors.unknown_leader("this instance is not the leader (any more)")
                return await self._forward(req)
            if req.method == "GET":
                with self.service.state_lock:
                    value = fn(req, **params)
            else:
                value = await asyncio.to_thread(self._locked, fn, req, params)
            status = 200
        except errors.RegistryError as e:
            status, value = e.status, e.body()
        body = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
        return Response(status, body, content_type=content_type)

    def _locked(self, fn, req, params):
        # the write lock before the state lock, always: a writer waiting for its read-back
        # releases the state lock but keeps the write lock
        with self.service.lock, self.service.state_lock:
            return fn(req, **params)

    async def _forward(self, req: Request) -> Response:
        url = self.leadership.leader_url()
        if url is None:
            raise_body = errors.unknown_leader("no registry instance is the leader yet; retry")
            return error_response(raise_body.status, raise_body.code, raise_body.message)
        if self.forwarder is None:
            e = errors.forwarding_failed("forwarding is not configured")
            return error_response(e.status, e.code, e.message)
        try:
            resp = await self.forwarder(req, url)
        except Exception as exc:
            e = errors.forwarding_failed(f"{url}: {exc}")
            return error_response(e.status, e.code, e.message)
        if resp.status == 200 and req.method == "POST":
            # read-your-writes here too: answer a forwarded registration once this
            # instance has read it, so a GET of the new id right after finds it
            try:
                schema_id = json.loads(resp.body)["id"]
                await asyncio.to_thread(self._wait_for_id, schema_id)
            except (ValueError, KeyError, TypeError):
                pass
        return resp

    def _wait_for_id(self, schema_id: int, timeout_s: float = 30.0) -> None:
        with self.service.state_lock:
            self.service.state_lock.wait_for(lambda: schema_id in self.service.state.by_id,
                                             timeout=timeout_s)
