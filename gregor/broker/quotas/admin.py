"""DescribeClientQuotas and AlterClientQuotas over the entity config store, sans-I/O.

The rules are Kafka's (ZkAdminManager.describeClientQuotas / alterClientQuotas, with the
value checks of the KRaft controller's ClientQuotaControlManager):

- an entity is a user, a client id, a user with a client id, or an ip; names may be null (the
  default entity, `<default>`); an empty name, an unknown entity type, a type given twice or an
  ip mixed with a user or client id is INVALID_REQUEST;
- an ip entity must be an IP address or a resolvable host name;
- describe filters have at most one component per entity type; an unknown entity type is
  UNSUPPORTED_VERSION ("Custom entity type ... not supported"), an ip component mixed with user
  or client-id components INVALID_REQUEST; match types are exact name (0), the default (1) or
  any name (2); `strict` leaves out entities with types the filter does not name;
- only quota keys are shown (a user's SCRAM credentials stay hidden) and entities without any.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Iterable, Mapping

from ...protocol.errors import InvalidRequestError, UnsupportedVersionError
from ..entity_configs.names import EntityPath, stored_name
from .keys import CLIENT_ID, IP, USER, checked_value, keys_for, stored_to_float

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2
_TYPES = {USER: "user", CLIENT_ID: "client id", IP: "ip"}


def entity_path(entity: Iterable[Mapping]) -> EntityPath:
    """The config path of an AlterClientQuotas entity ([{entity_type, entity_name}]), or
    InvalidRequestError with Kafka's message."""
    names: dict[str, str | None] = {}
    for part in entity:
        kind, name = part["entity_type"], part.get("entity_name")
        if kind in names:
            raise InvalidRequestError(
                f"Invalid client quota entity, duplicate entity entry {kind}")
        if kind not in _TYPES:
            raise InvalidRequestError(f"Unhandled client quota entity type: {kind}")
        if name is not None and name == "":
            raise InvalidRequestError(f"Empty {kind} not supported")
        names[kind] = name
    if not names:
        raise InvalidRequestError("Invalid empty client quota entity")
    if IP in names:
        if len(names) > 1:
            raise InvalidRequestError("Invalid quota entity combination, IP entity should not "
                                      "be used with user/client ID entity.")
        return EntityPath("ips", stored_name(names[IP]))
    if USER in names and CLIENT_ID in names:
        return EntityPath("users", stored_name(names[USER]), stored_name(names[CLIENT_ID]))
    if USER in names:
        return EntityPath("users", stored_name(names[USER]))
    return EntityPath("clients", stored_name(names[CLIENT_ID]))


def ip_needs_lookup(path: EntityPath) -> str | None:
    """The host name an ip entity names when it is not an IP literal (it must resolve, which
    is the caller's I/O); None for IP literals, defaults and other entity types."""
    if path.type != "ips":
        return None
    name = path.components()[IP]
    if name is None:
        return None
    try:
        ipaddress.ip_address(name)
        return None
    except ValueError:
        pass
    if not name or any(c.isspace() for c in name):
        raise InvalidRequestError(f"{name} is not a valid IP or resolvable host.")
    return name


def changes_for(path: EntityPath, ops: Iterable[Mapping]) -> dict[str, str | None]:
    """The store changes of an entry's ops ({key: text} to set, {key: None} to remove), or
    InvalidRequestError for a key the entity does not take or a bad value."""
    keys = keys_for(path.type)
    out: dict[str, str | None] = {}
    for op in ops:
        key = op["key"]
        if op.get("remove"):
            # As Kafka's controller: removing a key the entity has no quota for is a no-op
            # (never a way to delete a user's SCRAM credential kept in the same map).
            if key in keys:
                out[key] = None
        else:
            out[key] = checked_value(keys, key, float(op["value"]))
    return out


@dataclass
class Component:
    entity_type: str
    match_type: int
    match: str | None


def parse_filter(components: Iterable[Mapping]) -> dict[str, Component]:
    """{entity type: component} of a DescribeClientQuotas filter, checked as Kafka does."""
    out: dict[str, Component] = {}
    for c in components:
        kind = c["entity_type"]
        if kind == "":
            raise InvalidRequestError("Unexpected empty filter component entity type")
        if kind not in _TYPES:
            raise UnsupportedVersionError(f"Custom entity type '{kind}' not supported")
        if kind in out:
            raise InvalidRequestError(f"Duplicate {_TYPES[kind].replace('client id', 'client')}"
                                      " filter component entity type")
        match_type = c["match_type"]
        if match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED):
            raise InvalidRequestError(f"Unexpected match type: {match_type} (0 = exact name, "
                                      "1 = the default, 2 = any name)")
        if match_type == MATCH_EXACT and c.get("match") is None:
            raise InvalidRequestError(f"an exact match of {kind} needs a name")
        out[kind] = Component(kind, match_type, c.get("match"))
    if IP in out and (USER in out or CLIENT_ID in out):
        raise InvalidRequestError("Invalid entity filter component combination, IP filter "
                                  "component should not be used with user or clientId filter "
                                  "component.")
    return out


_ABSENT = object()


def _matches(component: Component | None, name, strict: bool) -> bool:
    """name: the entity's name of that type (None = default), _ABSENT when it has none."""
    if component is None:
        return name is _ABSENT or not strict
    if name is _ABSENT:
        return False
    if component.match_type == MATCH_SPECIFIED:
        return True
    if component.match_type == MATCH_DEFAULT:
        return name is None
    return name == component.match


def describe(configs: Mapping[str, Mapping[str, str]], components: Iterable[Mapping],
             strict: bool) -> list[tuple[dict[str, str | None], dict[str, float]]]:
    """[(entity {type: name or None}, {quota key: value})] of the entities matching the filter,
    sorted by path. configs: the store's {path: config}."""
    flt = parse_filter(components)
    want_ip = not (USER in flt or CLIENT_ID in flt)
    want_user_client = IP not in flt
    out = []
    for path_text in sorted(configs):
        try:
            path = EntityPath.parse(path_text)
        except ValueError:
            continue
        if (path.type == "ips" and not want_ip) or (path.type != "ips" and not want_user_client):
            continue
        entity = path.components()
        if not all(_matches(flt.get(kind), entity.get(kind, _ABSENT), strict)
                   for kind in _TYPES):
            continue
        keys = keys_for(path.type)
        values = {}
        for key, text in configs[path_text].items():
            if key in keys:
                value = stored_to_float(key, text)
                if value is not None:
                    values[key] = value
        if values:
            out.append((entity, values))
    return out
