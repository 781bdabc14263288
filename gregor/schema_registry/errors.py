"""Confluent Schema Registry errors as typed exceptions. The registry answers
`{"error_code": N, "message": "..."}`; the code picks the class, so callers can catch
"subject not found" without parsing messages."""
from __future__ import annotations


class SchemaRegistryError(Exception):
    """Any error the registry answered (or a transport failure: http_status -1)."""

    def __init__(self, http_status: int, error_code: int, message: str):
        super().__init__(f"{message} (HTTP {http_status}, error code {error_code})")
        self.http_status = http_status
        self.error_code = error_code
        self.message = message


class SubjectNotFoundError(SchemaRegistryError):
    """40401: no such subject (or it is soft-deleted and deleted=true was not asked)."""


class VersionNotFoundError(SchemaRegistryError):
    """40402: the subject has no such version."""


class SchemaNotFoundError(SchemaRegistryError):
    """40403: no schema with that id (or, on lookup, not registered under the subject)."""


class SubjectDeletedError(SchemaRegistryError):
    """40404 / 40405: the subject is soft-deleted, or must be before a permanent delete."""


class VersionDeletedError(SchemaRegistryError):
    """40406 / 40407: the same for one version."""


class ConfigNotFoundError(SchemaRegistryError):
    """40408 / 40409: the subject has no compatibility level (or mode) of its own."""


class IncompatibleSchemaError(SchemaRegistryError):
    """HTTP 409 (error code 409 or 40901): the schema breaks the subject's compatibility."""


class InvalidSchemaError(SchemaRegistryError):
    """42201: the schema text does not parse (or a reference is missing)."""


class InvalidVersionError(SchemaRegistryError):
    """42202: the version is not a positive number, "latest" or -1."""


class InvalidCompatibilityError(SchemaRegistryError):
    """42203 / 42204: an unknown compatibility level or mode."""


class OperationNotPermittedError(SchemaRegistryError):
    """42205 / 42206: forbidden by the registry's mode, or the version is referenced."""


class RegistryUnavailableError(SchemaRegistryError):
    """5000x: the registry's store, its leader or forwarding failed; retriable."""


class AuthenticationError(SchemaRegistryError):
    """HTTP 401 / 403: the credentials were refused."""


_BY_CODE = {
    40401: SubjectNotFoundError, 40402: VersionNotFoundError, 40403: SchemaNotFoundError,
    40404: SubjectDeletedError, 40405: SubjectDeletedError,
    40406: VersionDeletedError, 40407: VersionDeletedError,
    40408: ConfigNotFoundError, 40409: ConfigNotFoundError,
    409: IncompatibleSchemaError, 40901: IncompatibleSchemaError,
    42201: InvalidSchemaError, 42202: InvalidVersionError,
    42203: InvalidCompatibilityError, 42204: InvalidCompatibilityError,
    42205: OperationNotPermittedError, 42206: OperationNotPermittedError,
}


def error_for(http_status: int, error_code: int, message: str) -> SchemaRegistryError:
    """The typed exception for a registry error reply."""
    cls = _BY_CODE.get(error_code)
    if cls is None:
        if http_status in (401, 403):
            cls = AuthenticationError
        elif http_status == 409:
            cls = IncompatibleSchemaError
        elif 50000 <= error_code < 51000 or http_status >= 500:
            cls = RegistryUnavailableError
        else:
            cls = SchemaRegistryError
    return cls(http_status, error_code, message)
