"""One connection from this broker to another broker, on the inter-broker listener.

Every connection a broker opens to another goes through `BrokerConnection`: follower fetches
(replica_fetcher.py), the controller's requests (controller_channel.py), AlterPartition
(isr_changes.py), ControlledShutdown (member.py) and WriteTxnMarkers (markers.py). It speaks
the listener's security protocol (gregor/broker/security/inter_broker.py):

    connect -> TLS handshake (SSL, SASL_SSL) -> SaslHandshake v1 + SaslAuthenticate
    (SASL_PLAINTEXT, SASL_SSL) -> requests, one at a time

When the other broker gives the SASL session a lifetime (`connections.max.reauth.ms`,
KIP-368), the connection re-authenticates on the same socket before the request that comes
after 85-95 % of it (as Kafka's clients do); if the session has already ended (the connection
sat idle past it), it connects afresh instead, since the other side would close it at the next
request anyway.

A connection found closed by the other side before a request is sent on it (the other broker
restarted, or closed its connections while it was out of the cluster) is opened again at once,
and a request whose answer never started on a connection reused from earlier is sent once more
on a fresh one, rather than failing and waiting out the caller's backoff
(replica.fetch.backoff.ms for followers). Every request here is safe to repeat: they are
fenced by controller, broker and leader epochs.

Failures raise ConnectionError (AuthenticationFailed for TLS and SASL refusals, with what to
check), asyncio.TimeoutError or OSError; callers drop the connection and retry later.
"""
from __future__ import annotations

import asyncio
import logging
import random
import ssl
import struct

from ...protocol import messages
from ...protocol.header import decode_response, encode_request

log = logging.getLogger("gregor.broker.cluster.connection")

_SIZE = struct.Struct(">i")
MAX_RESPONSE = 1 << 30      # a frame size above this is a broken stream, not a response
SASL_HANDSHAKE = messages.api("SaslHandshake")
SASL_AUTHENTICATE = messages.api("SaslAuthenticate")
SASL_AUTHENTICATE_VERSION = 1      # v1: the answer carries session_lifetime_ms (KIP-368)
# the other broker started the session's clock before its answer reached us
_SESSION_END_MARGIN_S = 0.05


class AuthenticationFailed(ConnectionError):
    """The other broker refused this broker's TLS handshake or SASL login."""


class _ClosedBeforeAnswer(ConnectionError):
    """The connection ended before any byte of the answer came."""


class BrokerConnection:
    """One request at a time to one broker, on its own asyncio stream."""

    def __init__(self, host: str, port: int, client_id: str, timeout: float,
                 security=None):
        self.host, self.port = host, port
        self.client_id = client_id
        self.timeout = timeout
        self.security = security          # InterBrokerSecurity, or None for PLAINTEXT
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self._correlation = 0
        self._reauth_at: float | None = None
        self._session_end: float | None = None
        self.connects = 0                 # sockets opened, for tests and logs
        self.reauthentications = 0

    def __repr__(self) -> str:
        return f"BrokerConnection({self.host}:{self.port}, {self.security!r})"

    # -- requests --------------------------------------------------------------------------

    async def request(self, api, version: int, body: dict) -> dict:
        connects = self.connects
        try:
            await self._ready()
            return await self._exchange(api, version, body)
        except (_ClosedBeforeAnswer, ConnectionResetError, BrokenPipeError) as e:
            if self.connects != connects:
                raise                     # a socket opened for this request: a real failure
            # The other side closed this connection since our last request (it restarted,
            # or stepped out of the cluster and closed every connection): once more, afresh.
            log.debug("connection to %s:%d was closed (%s); reconnecting at once", self.host,
                      self.port, e or type(e).__name__)
            self.close()
            await self._ready()
            return await self._exchange(api, version, body)

    async def _exchange(self, api, version: int, body: dict) -> dict:
        self._correlation += 1
        self.writer.write(encode_request(api, version, self._correlation, self.client_id, body))
        await self.writer.drain()
        try:
            head = await asyncio.wait_for(self.reader.readexactly(4), self.timeout)
        except asyncio.IncompleteReadError as e:
            if not e.partial:
                raise _ClosedBeforeAnswer("connection closed by the other broker") from None
            raise
        size = _SIZE.unpack(head)[0]
        if not 0 < size <= MAX_RESPONSE:
            raise ConnectionError(f"bad response frame size {size}")
        frame = await asyncio.wait_for(self.reader.readexactly(size), self.timeout)
        correlation, answer = decode_response(api, version, frame)
        if correlation != self._correlation:
            raise ConnectionError(f"response {correlation} to request {self._correlation}")
        return answer

    async def _ready(self) -> None:
        """Connected, authenticated, and the session not due for re-authentication."""
        if self.writer is not None and (self.reader.at_eof() or self.writer.is_closing()):
            log.debug("connection to %s:%d found closed; reconnecting at once", self.host,
                      self.port)
            self.close()
        if self.writer is not None and self._reauth_at is not None:
            now = asyncio.get_running_loop().time()
            if now >= self._session_end - _SESSION_END_MARGIN_S:
                self.close()              # the session is over: the other side would cut us
            elif now >= self._reauth_at:
                await self._authenticate(reauthentication=True)
        if self.writer is None:
            await self._connect()

    # -- connecting ------------------------------------------------------------------------

    async def _connect(self) -> None:
        sec = self.security
        context = sec.ssl_context if sec is not None else None
        kwargs = {}
        if context is not None:
            kwargs = {"ssl": context, "server_hostname": self.host,
                      "ssl_handshake_timeout": self.timeout}
        try:
            self.reader, self.writer = await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port, **kwargs), self.timeout)
        except ssl.SSLCertVerificationError as e:
            raise AuthenticationFailed(
                f"TLS handshake with broker {self.host}:{self.port} on the inter-broker "
                f"listener failed: {e.verify_message or e.reason}; check "
                "ssl.truststore.* and that its certificate names this host "
                "(ssl.endpoint.identification.algorithm)") from None
        except ssl.SSLError as e:
            raise AuthenticationFailed(
                f"TLS handshake with broker {self.host}:{self.port} on the inter-broker "
                f"listener failed: {e.reason or e}; is that listener TLS, and does it need "
                "this broker's certificate (ssl.keystore.*)?") from None
        self.connects += 1
        self._correlation = 0
        self._reauth_at = self._session_end = None
        if sec is not None and sec.sasl is not None:
            try:
                await self._authenticate(reauthentication=False)
            except BaseException:
                self.close()
                raise

    async def _authenticate(self, reauthentication: bool) -> None:
        """SaslHandshake v1, then SaslAuthenticate until the mechanism is done."""
        from ...client.security.sasl import ScramError
        sasl = self.security.sasl
        exchange = sasl.exchange()
        where = f"broker {self.host}:{self.port}"
        answer = await self._exchange(SASL_HANDSHAKE, 1, {"mechanism": exchange.mechanism})
        if answer["error_code"]:
            raise AuthenticationFailed(
                f"{where} does not enable SASL/{exchange.mechanism} on the inter-broker "
                f"listener (it offers {', '.join(answer.get('mechanisms') or []) or 'none'}); "
                "set sasl.mechanism.inter.broker.protocol to one of them")
        token = exchange.first()
        while True:
            answer = await self._exchange(SASL_AUTHENTICATE, SASL_AUTHENTICATE_VERSION,
                                          {"auth_bytes": token})
            if answer["error_code"]:
                raise AuthenticationFailed(
                    f"{where} refused this broker's SASL/{exchange.mechanism} login as "
                    f"{sasl.username!r}: {answer.get('error_message') or answer['error_code']}"
                    "; check the username and password in this listener's "
                    f"{exchange.mechanism.lower()}.sasl.jaas.config and that the user exists "
                    "(gregor users add --zookeeper)")
            try:
                token = exchange.next(bytes(answer["auth_bytes"] or b""))
            except ScramError as e:
                raise AuthenticationFailed(f"{where}: SASL/{exchange.mechanism}: {e}") from None
            if token is None:
                break
        lifetime_ms = answer.get("session_lifetime_ms") or 0
        if lifetime_ms > 0:
            now = asyncio.get_running_loop().time()
            self._reauth_at = now + lifetime_ms / 1000.0 * random.uniform(0.85, 0.95)
            self._session_end = now + lifetime_ms / 1000.0
        else:
            self._reauth_at = self._session_end = None
        if reauthentication:
            self.reauthentications += 1
        log.debug("%s %s as %s (SASL/%s)%s", where,
                  "re-authenticated" if reauthentication else "authenticated", sasl.username,
                  exchange.mechanism, f", session of {lifetime_ms} ms" if lifetime_ms else "")

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None
        self._reauth_at = self._session_end = None
