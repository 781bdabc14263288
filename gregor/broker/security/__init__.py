"""Security on the broker: who a connection is (principals), how it proved it (TLS, SASL) and
what it may do (the authorizer). Every request's RequestContext carries its principal."""
