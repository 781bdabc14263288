"""SASL/SCRAM-SHA-256 and SCRAM-SHA-512 on the broker (RFC 5802 / 7677, Kafka's ScramSaslServer).

Two client messages. client-first names the user and brings a nonce; the server answers with
the user's salt and iterations and its own nonce appended. client-final proves knowledge of the
password; the server checks the proof against the stored key and answers with its signature.

Kafka's rules kept here: only the `n` GS2 flag (no channel binding); an authzid, if any, must
equal the user name; the nonce of client-final must end with the server-first nonce (not equal
it: librdkafka before 2.6.1 repeats its own nonce in front); the AuthMessage is built from the
client's bytes as sent; the proof is compared in constant time. An unknown user, a user without
a credential for this mechanism and a wrong password fail the same way to the client (the
broker's log tells them apart).
"""
from __future__ import annotations

import hmac
from typing import Callable

from ....security.scram import (MIN_ITERATIONS, ClientFinal, ClientFirst, ScramCredential,
                                ScramError, ScramMechanism, ServerFinal, ServerFirst,
                                auth_message, random_nonce, xor)
from . import AuthenticationFailed, SaslFailure

CredentialLookup = Callable[[str, str], "ScramCredential | None"]   # (user, mechanism)


class ScramServer:
    def __init__(self, mech: ScramMechanism, lookup: CredentialLookup,
                 nonce: Callable[[], str] = random_nonce):
        self.mech = mech
        self.mechanism = mech.name
        self._lookup = lookup
        self._nonce = nonce
        self._state = "first"
        self._first: ClientFirst | None = None
        self._server_first: str | None = None
        self._full_nonce = ""
        self._credential: ScramCredential | None = None
        self.complete = False
        self.authorization_id: str | None = None
        self.lifetime_ms = None

    def evaluate(self, token: bytes) -> bytes:
        try:
            if self._state == "first":
                return self._on_client_first(token)
            if self._state == "final":
                return self._on_client_final(token)
            raise SaslFailure(f"unexpected SCRAM message in state {self._state}")
        except (SaslFailure, AuthenticationFailed):
            self._fail()
            raise
        except ScramError as e:
            self._fail()
            raise SaslFailure(str(e)) from None

    def _fail(self) -> None:
        self._state = "failed"
        self._credential = None

    def _on_client_first(self, token: bytes) -> bytes:
        first = ClientFirst.parse(token)
        username = first.username
        credential = self._lookup(username, self.mech.name)
        if credential is None:
            raise SaslFailure(f"no {self.mech.name} credential for user {username!r} "
                              "(unknown user, or no credential for this mechanism)")
        if first.authzid and first.authzid != username:
            raise AuthenticationFailed("Authentication failed: Client requested an "
                                       "authorization id that is different from username")
        if credential.iterations < MIN_ITERATIONS:
            raise SaslFailure(f"Iterations {credential.iterations} is less than the minimum "
                              f"{MIN_ITERATIONS} for {self.mech.name}")
        self._first = first
        self._credential = credential
        self._full_nonce = first.nonce + self._nonce()
        self._server_first = ServerFirst.build(self._full_nonce, credential.salt,
                                               credential.iterations)
        self.authorization_id = username
        self._state = "final"
        return self._server_first.encode("ascii")

    def _on_client_final(self, token: bytes) -> bytes:
        final = ClientFinal.parse(token)
        if not final.nonce.endswith(self._full_nonce):
            raise SaslFailure("Invalid client nonce in the final client message.")
        cred = self._credential
        msg = auth_message(self._first.bare, self._server_first, final.without_proof)
        signature = self.mech.hmac(cred.stored_key, msg)
        if len(final.proof) != len(signature):
            raise SaslFailure("Invalid client credentials (proof of the wrong length)")
        computed = self.mech.hash(xor(signature, final.proof))
        if not hmac.compare_digest(computed, cred.stored_key):
            raise SaslFailure(f"Invalid client credentials for user "
                              f"{self.authorization_id!r} (wrong password)")
        server_signature = self.mech.hmac(cred.server_key, msg)
        self._credential = None
        self._state = "complete"
        self.complete = True
        return ServerFinal.build(server_signature).encode("ascii")
