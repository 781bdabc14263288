"""Entity names and paths of Kafka's dynamic entity configs (users, clients, ips), sans-I/O.

Kafka's ZooKeeper mode keeps one config map per entity under /config/<type>/<name>, with a
user's per-client-id configs one level down (/config/users/<u>/clients/<c>). gregor names an
entity by that path below /config, the same string Kafka's change notifications carry as
"entity_path":

    users/<sanitized user>                  users/<default>
    clients/<sanitized client id>           clients/<default>
    users/<u>/clients/<c>                   (either side may be <default>)
    ips/<sanitized ip>                      ips/<default>

Names are stored sanitized as Kafka's Sanitizer does (URL-encoding with UTF-8, then '*' as %2A
and space as %20), so a name with '/' cannot break the path and znodes written by Kafka's own
tools are read as they are. `<default>` is written as is: it is the default entity.
"""
from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote_plus

DEFAULT = "<default>"
USERS, CLIENTS, IPS = "users", "clients", "ips"
GROUPS = "groups"               # group configs (gregor/broker/group_configs.py)
ENTITY_TYPES = (USERS, CLIENTS, IPS, GROUPS)

# What java.net.URLEncoder leaves as it is (Python's quote() also keeps '~', Java does not).
_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")


def sanitize(name: str) -> str:
    """Kafka's Sanitizer.sanitize: 'user 1*' -> 'user%201%2A', 'CN=a,O=b' -> 'CN%3Da%2CO%3Db'."""
    out = []
    for b in name.encode("utf-8"):
        if b in _SAFE:
            out.append(chr(b))
        else:
            out.append(f"%{b:02X}")       # space -> %20 and '*' -> %2A fall out of this
    return "".join(out)


def desanitize(name: str) -> str:
    """Kafka's Sanitizer.desanitize (URL decoding: '+' is a space, %XX a byte)."""
    return unquote_plus(name, encoding="utf-8", errors="strict")


def stored_name(name: str | None) -> str:
    """A name as it appears in a path: None (the default entity) -> '<default>'."""
    return DEFAULT if name is None else sanitize(name)


def shown_name(stored: str) -> str | None:
    """The inverse of stored_name: '<default>' -> None."""
    return None if stored == DEFAULT else desanitize(stored)


@dataclass(frozen=True)
class EntityPath:
    """One entity: its type ('users', 'clients', 'ips'), its stored (sanitized) name and, for
    a user's client-id entity, the stored client name."""
    type: str
    name: str
    client: str | None = None

    def __str__(self) -> str:
        base = f"{self.type}/{self.name}"
        return base if self.client is None else f"{base}/{CLIENTS}/{self.client}"

    @classmethod
    def parse(cls, path: str) -> "EntityPath":
        """'users/alice/clients/app' -> EntityPath('users', 'alice', 'app'). ValueError when
        the path names no entity gregor keeps."""
        parts = path.strip("/").split("/")
        if len(parts) == 2 and parts[0] in ENTITY_TYPES and parts[1]:
            return cls(parts[0], parts[1])
        if len(parts) == 4 and parts[0] == USERS and parts[2] == CLIENTS and parts[1] \
                and parts[3]:
            return cls(USERS, parts[1], parts[3])
        raise ValueError(f"{path!r} is not an entity config path (users/<u>, clients/<c>, "
                         "users/<u>/clients/<c>, ips/<ip> or groups/<g>)")

    @classmethod
    def of(cls, user: str | None = ..., client: str | None = ..., ip: str | None = ...
           ) -> "EntityPath":
        """From plain names (None = the default entity, leave out what is not part of it):
        of(user='alice', client=None) -> users/alice/clients/<default>."""
        has_user, has_client, has_ip = user is not ..., client is not ..., ip is not ...
        if has_ip and not has_user and not has_client:
            return cls(IPS, stored_name(ip))
        if has_user and has_client and not has_ip:
            return cls(USERS, stored_name(user), stored_name(client))
        if has_user and not has_client and not has_ip:
            return cls(USERS, stored_name(user))
        if has_client and not has_user and not has_ip:
            return cls(CLIENTS, stored_name(client))
        raise ValueError("an entity is a user, a client id, a user and a client id, or an ip")

    def components(self) -> dict[str, str | None]:
        """Kafka's entity description: {'user': 'alice', 'client-id': None} for
        users/alice/clients/<default> (None: the default entity)."""
        if self.type == IPS:
            return {"ip": shown_name(self.name)}
        if self.type == GROUPS:
            return {"group": shown_name(self.name)}
        if self.type == CLIENTS:
            return {"client-id": shown_name(self.name)}
        out = {"user": shown_name(self.name)}
        if self.client is not None:
            out["client-id"] = shown_name(self.client)
        return out
