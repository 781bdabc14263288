"""gregor.schema_registry: a Confluent Schema Registry client (REST, with caches), whose
methods and values match confluent-kafka's so serializers take either."""
from .client import SchemaRegistryClient
from .errors import (AuthenticationError, ConfigNotFoundError, IncompatibleSchemaError,
                     InvalidCompatibilityError, InvalidSchemaError, InvalidVersionError,
                     OperationNotPermittedError, RegistryUnavailableError,
                     SchemaNotFoundError, SchemaRegistryError, SubjectDeletedError,
                     SubjectNotFoundError, VersionDeletedError, VersionNotFoundError)
from .types import RegisteredSchema, Schema, SchemaReference

__all__ = ["SchemaRegistryClient", "Schema", "SchemaReference", "RegisteredSchema",
           "SchemaRegistryError", "SubjectNotFoundError", "VersionNotFoundError",
           "SchemaNotFoundError", "SubjectDeletedError", "VersionDeletedError",
           "ConfigNotFoundError", "IncompatibleSchemaError", "InvalidSchemaError",
           "InvalidVersionError", "InvalidCompatibilityError", "OperationNotPermittedError",
           "RegistryUnavailableError", "AuthenticationError"]
