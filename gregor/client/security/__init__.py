"""TLS and SASL for gregor's clients: the options (options.py), the TLS context (tls.py), the
SASL mechanisms (sasl.py, oauthbearer.py) and how a connection goes through them
(secure_connection.py: a non-blocking TLS handshake, then SASL after ApiVersions,
re-authentication before the session ends)."""
