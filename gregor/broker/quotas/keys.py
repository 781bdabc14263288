"""Kafka's client quota config keys, their types and the checks AlterClientQuotas applies.

    producer_byte_rate        long    bytes/s a user/client may produce, per broker
    consumer_byte_rate        long    bytes/s a user/client may fetch, per broker
    request_percentage        double  % of one request thread's time per quota window
    controller_mutation_rate  double  partitions created or deleted per second (KIP-599)
    connection_creation_rate  int     new connections per second from one IP

The first four belong to users, client ids and user+client-id entities, the last to ips
(Kafka's QuotaConfig). Values are checked as Kafka's controller checks them
(ClientQuotaControlManager.validateQuotaKeyValue): a known key, greater than 0, whole for the
integral types, in range. They are stored as text the way Kafka's ZooKeeper mode writes them
("1048576" for integral types, "12.5" for doubles).
"""
from __future__ import annotations

import math

from ...protocol.errors import InvalidRequestError

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"

LONG_MAX = (1 << 63) - 1
INT_MAX = (1 << 31) - 1

USER_CLIENT_KEYS: dict[str, str] = {
    PRODUCER_BYTE_RATE: "long",
    CONSUMER_BYTE_RATE: "long",
    REQUEST_PERCENTAGE: "double",
    CONTROLLER_MUTATION_RATE: "double",
}
IP_KEYS: dict[str, str] = {CONNECTION_CREATION_RATE: "int"}
ALL_KEYS = {**USER_CLIENT_KEYS, **IP_KEYS}

# Kafka's entity type names in the admin API, and the config path type of each.
USER, CLIENT_ID, IP = "user", "client-id", "ip"


def keys_for(entity_type: str) -> dict[str, str]:
    """The quota keys an entity of this config path type ('users', 'clients', 'ips') takes."""
    return IP_KEYS if entity_type == "ips" else USER_CLIENT_KEYS


def checked_value(keys: dict[str, str], key: str, value: float) -> str:
    """The stored text of a quota value, or InvalidRequestError with Kafka's message."""
    kind = keys.get(key)
    if kind is None:
        raise InvalidRequestError(f"Invalid configuration key {key}")
    if math.isnan(value) or value <= 0.0:
        raise InvalidRequestError(f"Quota {key} must be greater than 0")
    if kind == "double":
        if math.isinf(value):
            raise InvalidRequestError(f"Proposed value for {key} is too large for a DOUBLE.")
        return _java_double(value)
    limit, kind_name = (LONG_MAX, "a LONG") if kind == "long" else (INT_MAX, "an INT")
    if value > limit:
        raise InvalidRequestError(f"Proposed value for {key} is too large for {kind_name}.")
    if abs(value % 1.0) > 1e-6:
        raise InvalidRequestError(f"{key} cannot be a fractional value.")
    return str(int(value + 1e-6))


def _java_double(value: float) -> str:
    """Java's Double.toString for ordinary values: 200.0, 12.34."""
    text = repr(float(value))
    return text if ("." in text or "e" in text or "inf" in text) else text + ".0"


def stored_to_float(key: str, text: str) -> float | None:
    """A stored quota value as a number; None (with the reason logged by the caller) when a
    hand-written znode or file holds something else."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if value > 0 and not math.isnan(value) else None
