"""How one client connection goes through TLS and SASL, driven by NetworkClient (network.py):

    CONNECTING -> HANDSHAKING (TLS) -> NEGOTIATING (ApiVersions) -> AUTHENTICATING (SASL) -> READY

TLS runs on the non-blocking socket itself (ssl.SSLSocket with do_handshake_on_connect=False,
stepped on selector events). SASL is SaslHandshake v1 then SaslAuthenticate requests, sent as
internal requests of the connection, after ApiVersions as librdkafka and the Java client do.
When the broker gives the session a lifetime (KIP-368), the connection re-authenticates at a
random 85-95 % of it, as the Java client does; requests already on the wire finish first, new
ones wait until it is done.

Failures close the connection with an AuthenticationError naming what to check; the error is
kept on the connection so blocking calls raise it instead of waiting for their timeout.
"""
from __future__ import annotations

import logging
import random
import selectors
import ssl

from ...protocol import messages
from ...security.scram import ScramError
from ..errors import AuthenticationError, ConfigError, KafkaConnectionError
from .sasl import SaslSettings, uses_sasl
from .tls import client_context, uses_tls

log = logging.getLogger("gregor.client.security")

SASL_HANDSHAKE = messages.api("SaslHandshake")
SASL_AUTHENTICATE = messages.api("SaslAuthenticate")
HANDSHAKING, AUTHENTICATING = "handshaking", "authenticating"
_READY = "ready"
# The broker's clock started the session before its answer reached us: count it as over a
# little early.
_SESSION_END_MARGIN_S = 0.05


class ConnectionSecurity:
    def __init__(self, cfg):
        self.protocol = cfg["security.protocol"]
        self.tls = client_context(cfg) if uses_tls(cfg) else None
        self.sasl = SaslSettings(cfg) if uses_sasl(cfg) else None

    def __repr__(self) -> str:
        return f"ConnectionSecurity({self.protocol}, sasl={self.sasl!r})"

    @property
    def active(self) -> bool:
        return self.tls is not None or self.sasl is not None

    # -- TLS --------------------------------------------------------------------------------

    def start_tls(self, net, c, now: float) -> None:
        try:
            c.sock = self.tls.wrap_socket(c.sock, server_hostname=c.host,
                                          do_handshake_on_connect=False)
        except (ssl.SSLError, OSError, ValueError) as e:
            self._fail(net, c, f"cannot start TLS with node {c.node_id} ({c.host}:{c.port}): {e}")
            return
        c.state = HANDSHAKING
        self.step_tls(net, c, now)

    def step_tls(self, net, c, now: float) -> None:
        try:
            c.sock.do_handshake()
        except ssl.SSLWantReadError:
            net._set_events(c, selectors.EVENT_READ)
            return
        except ssl.SSLWantWriteError:
            net._set_events(c, selectors.EVENT_WRITE)
            return
        except ssl.SSLCertVerificationError as e:
            self._fail(net, c, f"TLS handshake with node {c.node_id} ({c.host}:{c.port}) "
                               f"failed: {e.verify_message or e.reason}; check ssl.ca.location "
                               "(or ssl.truststore.location) and that the broker's certificate "
                               "names this host (ssl.endpoint.identification.algorithm)")
            return
        except (ssl.SSLError, OSError) as e:
            self._fail(net, c, f"TLS handshake with node {c.node_id} ({c.host}:{c.port}) "
                               f"failed: {getattr(e, 'reason', None) or e}; is that listener "
                               "TLS (security.protocol), and does it require a client "
                               "certificate (ssl.certificate.location)?")
            return
        net._set_events(c, selectors.EVENT_READ)
        net._start_negotiation(c, now)

    # -- SASL -------------------------------------------------------------------------------

    def renew(self, net, c, now: float) -> None:
        """The session is due for re-authentication. If it has already ended (nothing ran
        the client's poll in time), the broker would close the connection at our next
        request: let it go and connect afresh instead (no failure, no backoff)."""
        if c.session_end is not None and now >= c.session_end - _SESSION_END_MARGIN_S:
            log.debug("node %s: SASL session ended; reconnecting", c.node_id)
            net._close_conn(c, KafkaConnectionError(f"the SASL session with node {c.node_id} "
                                                    "ended"), False)
            c.failures = 0
            c.next_attempt = now
            return
        self.start_sasl(net, c, now)

    def start_sasl(self, net, c, now: float) -> None:
        """After ApiVersions (or when the session is due for re-authentication)."""
        version = net.negotiated_version(c, SASL_HANDSHAKE)
        auth_version = net.negotiated_version(c, SASL_AUTHENTICATE)
        if version is None or version < 1 or auth_version is None:
            self._fail(net, c, f"node {c.node_id} ({c.host}:{c.port}) does not offer "
                               "SaslHandshake v1 and SaslAuthenticate; is that listener SASL "
                               "(security.protocol), and the broker Kafka 1.0 or newer?")
            return
        reauth = c.state == _READY
        c.state = AUTHENTICATING
        c.reauth_at = c.session_end = None
        exchange = self.sasl.exchange()

        def on_handshake(req):
            if req.error is not None:
                return                            # the connection is already closed
            body = req.body
            if body["error_code"]:
                offered = ", ".join(body.get("mechanisms") or []) or "none"
                self._fail(net, c, f"node {c.node_id} does not enable SASL mechanism "
                                   f"{exchange.mechanism} (it offers {offered}); set "
                                   "sasl.mechanism to one of them")
                return
            send(exchange.first())

        def send(token: bytes) -> None:
            net._enqueue(c, SASL_AUTHENTICATE, auth_version, {"auth_bytes": token},
                         on_authenticate, True, net.clock(), internal=True)

        def on_authenticate(req):
            if req.error is not None:
                return
            body = req.body
            if body["error_code"]:
                self._fail(net, c, f"SASL/{exchange.mechanism} authentication of user "
                                   f"{self.sasl.username!r} with node {c.node_id} "
                                   f"({c.host}:{c.port}) failed: "
                                   f"{body.get('error_message') or 'error ' + str(body['error_code'])}")
                return
            try:
                token = exchange.next(bytes(body["auth_bytes"]))
            except ScramError as e:
                self._fail(net, c, f"SASL/{exchange.mechanism} with node {c.node_id}: {e}")
                return
            if token is not None:
                send(token)
                return
            lifetime_ms = body.get("session_lifetime_ms") or 0
            if lifetime_ms > 0:
                now = net.clock()
                c.reauth_at = now + lifetime_ms / 1000.0 * random.uniform(0.85, 0.95)
                c.session_end = now + lifetime_ms / 1000.0
            log.debug("node %s: %sauthenticated as %s (SASL/%s)%s", c.node_id,
                      "re-" if reauth else "", self.sasl.username, exchange.mechanism,
                      f", session of {lifetime_ms} ms" if lifetime_ms else "")
            net._authenticated(c)

        net._enqueue(c, SASL_HANDSHAKE, 1, {"mechanism": exchange.mechanism}, on_handshake,
                     True, now, internal=True)

    def _fail(self, net, c, message: str) -> None:
        err = AuthenticationError(message)
        log.warning("%s", message)
        net._close_conn(c, err)
        c.auth_error = err


def connection_security(cfg) -> ConnectionSecurity | None:
    """None for PLAINTEXT (nothing to do per connection); raises ConfigError for bad settings."""
    if cfg["security.protocol"] == "PLAINTEXT":
        return None
    sec = ConnectionSecurity(cfg)
    if not sec.active:
        raise ConfigError(f"security.protocol={cfg['security.protocol']} needs TLS or SASL")
    return sec
