"""Confluent Schema Registry's errors: an HTTP status, an `error_code` and a message.

Clients (confluent-kafka's SchemaRegistryClient among them) read the body
`{"error_code": int, "message": str}`; anything else becomes code -1 there, so every failure
the registry answers goes through `RegistryError`. Codes and message texts are Confluent's
(its rest/exceptions/Errors.java), so code that matches on them keeps working.
"""
from __future__ import annotations


class RegistryError(Exception):
    """A failure answered as `{"error_code": code, "message": message}` with `status`."""

    def __init__(self, status: int, code: int, message: str):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def body(self) -> dict:
        return {"error_code": self.code, "message": self.message}

    def __repr__(self) -> str:
        return f"RegistryError({self.status}, {self.code}, {self.message!r})"


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(version) -> RegistryError:
    return RegistryError(404, 40402, f"Version {version} not found.")


def schema_not_found(detail=None) -> RegistryError:
    return RegistryError(404, 40403, "Schema not found" if detail is None
                         else f"Schema {detail} not found")


def subject_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(404, 40404, f"Subject '{subject}' was soft deleted.Set permanent=true "
                                     "to delete permanently")


def subject_not_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(404, 40405, f"Subject '{subject}' was not deleted first before being "
                                     "permanently deleted")


def version_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(404, 40406, f"Subject '{subject}' Version {version} was soft deleted."
                                     "Set permanent=true to delete permanently")


def version_not_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(404, 40407, f"Subject '{subject}' Version {version} was not deleted "
                                     "first before being permanently deleted")


def subject_level_compatibility_not_configured(subject: str) -> RegistryError:
    return RegistryError(404, 40408, f"Subject '{subject}' does not have subject-level "
                                     "compatibility configured")


def subject_level_mode_not_configured(subject: str) -> RegistryError:
    return RegistryError(404, 40409, f"Subject '{subject}' does not have subject-level mode "
                                     "configured")


def not_found(path: str) -> RegistryError:
    """An unknown route (Jersey answers 404 with code 404)."""
    return RegistryError(404, 404, f"HTTP 404 Not Found: no route for {path}")


def incompatible(subject: str, messages: list[str]) -> RegistryError:
    # 409 as Confluent Platform 7.x sends it (40901 only in the newest releases)
    return RegistryError(409, 409, "Schema being registered is incompatible with an earlier "
                                   f"schema for subject \"{subject}\", details: "
                                   f"[{', '.join(messages)}]")


def invalid_schema(detail: str) -> RegistryError:
    return RegistryError(422, 42201, f"Invalid schema {detail}")


def invalid_version(version) -> RegistryError:
    return RegistryError(422, 42202, f"The specified version '{version}' is not a valid version "
                                     "id. Allowed values are between [1, 2^31-1] and the string "
                                     "\"latest\"")


def invalid_compatibility_level(level) -> RegistryError:
    return RegistryError(422, 42203, f"Invalid compatibility level. Valid values are none, "
                                     f"backward, forward, full, backward_transitive, "
                                     f"forward_transitive, and full_transitive (got {level!r})")


def invalid_mode(mode) -> RegistryError:
    return RegistryError(422, 42204, f"Invalid mode. Valid values are READWRITE, READONLY, "
                                     f"READONLY_OVERRIDE and IMPORT (got {mode!r})")


def operation_not_permitted(detail: str) -> RegistryError:
    return RegistryError(422, 42205, detail)


def reference_exists(detail: str) -> RegistryError:
    return RegistryError(422, 42206, detail)


def unprocessable(detail: str) -> RegistryError:
    """A body that is not the JSON the route expects (Jersey's 422 for a bad entity)."""
    return RegistryError(422, 422, detail)


def store_error(detail: str) -> RegistryError:
    return RegistryError(500, 50001, f"Error while storing the schema: {detail}")


def operation_timeout(detail: str) -> RegistryError:
    return RegistryError(500, 50002, detail)


def forwarding_failed(detail: str) -> RegistryError:
    return RegistryError(500, 50003, f"Error while forwarding the request to the leader: "
                                     f"{detail}")


def unknown_leader(detail: str = "") -> RegistryError:
    return RegistryError(500, 50004, f"Leader not known{': ' + detail if detail else ''}")
