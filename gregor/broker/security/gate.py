"""What stands between a SASL connection and the broker's APIs: the connection's
SaslAuthenticator, driven by the frames the server cuts (server.Connection calls `admits` for
each frame while the gate is in place).

It answers the SASL requests itself, hands ApiVersions (before authentication) and every request
after it to the broker's handlers, closes connections that break the rules, and delays the close
after a failed authentication by connection.failed.authentication.delay.ms (what Kafka does to
slow down password guessing). Once a connection is authenticated for good (no session
lifetime), the gate removes itself: authenticated requests pay nothing for it.
"""
from __future__ import annotations

import asyncio
import logging
import time

from .sasl.authenticator import SASL_AUTHENTICATE, SaslAuthenticator

log = logging.getLogger("gregor.broker.security")


class SaslGate:
    __slots__ = ("conn", "auth", "delay_s", "open_limit", "failed")

    def __init__(self, conn, auth: SaslAuthenticator, *, delay_s: float, max_receive: int):
        self.conn = conn
        self.auth = auth
        self.delay_s = delay_s
        self.open_limit = conn.frame_limit          # the limit once authenticated
        self.failed = False
        conn.frame_limit = max_receive              # sasl.server.max.receive.size until then
        conn.frame_limit_name = "sasl.server.max.receive.size (before authentication)"

    def admits(self, frame) -> bool:
        """True: the server handles the frame as a request. False: the gate dealt with it."""
        if self.failed:
            return False                            # closing: nothing more is read
        conn = self.conn
        try:
            out = self.auth.on_frame(frame, time.monotonic())
        except Exception:                           # a bug must not open the gate
            log.exception("SASL authentication from %s failed unexpectedly", conn.peer)
            self._close("", False)
            return False
        if out.passthrough:
            return True
        if out.reply is not None:
            handlers = conn.server.handlers
            conn._enqueue(handlers.get(SASL_AUTHENTICATE.key), 0, 0, out.reply,
                          time.perf_counter())
        if out.close:
            self._close(out.why, out.delay)
            return False
        if self.auth.just_completed:
            self._authenticated()
        return False

    def _authenticated(self) -> None:
        conn, auth = self.conn, self.auth
        auth.just_completed = False
        conn.principal = auth.principal
        conn.frame_limit = self.open_limit
        conn.frame_limit_name = "socket.request.max.bytes"
        log.debug("connection from %s authenticated as %s (SASL/%s)%s", conn.peer,
                  auth.principal, auth.mechanism,
                  "" if auth.expiry is None else
                  f"; session ends in {auth.expiry - time.monotonic():.0f}s")
        if auth.expiry is None:
            conn.gate = None                        # nothing left to check on this connection

    def _close(self, why: str, delay: bool) -> None:
        conn = self.conn
        self.failed = True
        if not delay:
            conn.close_after_pending(why)
            return
        log.warning("authentication from %s failed: %s", conn.peer, why)
        conn.stopped_reading = True
        if conn.transport is not None:
            conn.transport.pause_reading()
        loop = asyncio.get_running_loop()
        loop.call_later(self.delay_s, conn.close_after_pending, "")
