"""Writes sent on to the leader instance over HTTP, as Confluent's followers forward them.

The request goes as it came (method, path, query, body, content type, authorization) and
its answer comes back as it is; one attempt, the client retries 50003 / 50004.
"""
from __future__ import annotations

import asyncio
import http.client
import ssl
from urllib.parse import urlencode, urlsplit

from .http_server import Request, Response

FORWARD_TIMEOUT_S = 30.0
_PASS_HEADERS = ("content-type", "accept", "authorization")
FORWARDED_HEADER = "x-forwarded-by"
# the context leaders' certificates are checked with (set_forward_tls_context for a private CA)
_tls_context = ssl.create_default_context()


def set_forward_tls_context(context: ssl.SSLContext) -> None:
    global _tls_context
    _tls_context = context


def _send(req: Request, url: str) -> Response:
    parts = urlsplit(url)
    if parts.scheme == "https":
        conn = http.client.HTTPSConnection(parts.hostname, parts.port,
                                           timeout=FORWARD_TIMEOUT_S, context=_tls_context)
    else:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=FORWARD_TIMEOUT_S)
    try:
        query = urlencode([(k, v) for k, vs in req.query.items() for v in vs])
        target = req.raw_path + (f"?{query}" if query else "")
        headers = {k: req.headers[k] for k in _PASS_HEADERS if k in req.headers}
        headers[FORWARDED_HEADER] = "gregor-schema-registry"
        conn.request(req.method, target, body=req.body or None, headers=headers)
        resp = conn.getresponse()
        body = resp.read()
        return Response(resp.status, body,
                        content_type=resp.getheader("content-type",
                                                    "application/vnd.schemaregistry.v1+json"))
    finally:
        conn.close()


async def forward(req: Request, url: str) -> Response:
    return await asyncio.to_thread(_send, req, url)
