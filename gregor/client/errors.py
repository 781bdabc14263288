"""Client-side errors (broker error codes stay in gregor.protocol.errors)."""
from __future__ import annotations


class ClientError(Exception):
    """Base class of errors raised by the gregor clients themselves."""


class ConfigError(ClientError, ValueError):
    """A configuration key is unknown, has a bad value, or conflicts with another key."""


class KafkaConnectionError(ClientError):
    """A broker could not be reached, or the connection to it was lost."""


class BrokerNotReachableError(KafkaConnectionError):
    """No bootstrap server ever accepted a connection within gregor.bootstrap.timeout.ms:
    nothing listens there (or it is not reachable), so waiting longer would not help."""


class CorrelationIdMismatchError(KafkaConnectionError):
    """A response arrived whose correlation id is not the oldest outstanding request's."""


class KafkaTimeoutError(ClientError, TimeoutError):
    """A client-side deadline passed (request.timeout.ms, max.block.ms, delivery.timeout.ms)."""


class ProducerClosedError(ClientError):
    """send() was called on a producer that is closing or closed."""


class AuthenticationError(KafkaConnectionError):
    """The TLS handshake or the SASL authentication with a broker failed. Retrying with the
    same settings fails the same way: the message says what to check."""
