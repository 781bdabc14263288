"""TLS and SASL for gregor's clients: the options (options.py), the TLS context (tls.py), the
SASL mechanisms (sasl.py) and how a connection goes through them (connection.py)."""
