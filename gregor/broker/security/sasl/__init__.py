"""SASL on the broker: the authenticator (Kafka's SaslServerAuthenticator state machine, sans-I/O)
and one server per mechanism (PLAIN, SCRAM-SHA-256/512).

A mechanism server has `evaluate(token) -> bytes | None` (the challenge to send, None for
none), `complete`, `authorization_id` and `lifetime_ms` (credential expiry, None when the
credential does not expire). It fails with one of two exceptions, as in Kafka:

- AuthenticationFailed: its message goes to the client as it is (PLAIN's "Invalid username or
  password": written so that it tells nothing an attacker may not know);
- SaslFailure: the client gets Kafka's fixed text "Authentication failed during authentication
  due to invalid credentials with SASL mechanism <MECH>"; the real cause (unknown user, wrong
  proof, missing credential for this mechanism) goes to the broker's log only.

Neither ever carries a password or key.
"""
from __future__ import annotations


class AuthenticationFailed(Exception):
    """Authentication failed; the message is safe to send to the client."""


class SaslFailure(Exception):
    """Authentication failed; the message is for the broker's log only."""


class UnsupportedMechanism(AuthenticationFailed):
    pass
