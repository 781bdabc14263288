"""Security pieces the broker, the clients and the CLI share, all without I/O: SCRAM (RFC 5802 /
7677) messages and key derivation, Java JAAS option strings, and key/trust store loading for TLS.

The broker's side (listeners, the SASL state machine, principals, the credential store) lives in
gregor.broker.security; the clients' side in gregor.client.security.
"""
