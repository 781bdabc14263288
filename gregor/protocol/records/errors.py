"""Errors for record batches that are both protocol decode errors and Kafka errors.

A broker answers CORRUPT_MESSAGE or INVALID_RECORD for them, and code that only knows the
codec layer can still catch DecodeError: each class below is both.
"""
from __future__ import annotations

from ..errors import CorruptMessageError, InvalidRecordError
from ..primitives import DecodeError


class CorruptRecordsError(CorruptMessageError, DecodeError):
    """Bytes that are not a well-formed batch: bad CRC, impossible lengths, truncation,
    undecodable compressed data."""


class InvalidRecordsError(InvalidRecordError, DecodeError):
    """A well-formed batch that breaks the rules: inconsistent record count or offsets,
    control records where they are not allowed, missing sequence numbers."""
