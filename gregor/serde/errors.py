"""Serialization errors: ValueError subclasses, so code that catches ValueError from a
serializer keeps working."""
from __future__ import annotations


class SerializationError(ValueError):
    """A value could not be written (it does not match its schema) or read."""


class NotFramedError(SerializationError):
    """The bytes do not start with Confluent's magic byte 0 and a 4-byte schema id."""


class UnknownSchemaError(SerializationError):
    """The schema id in the bytes is not in the registry."""
