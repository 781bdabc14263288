"""ACLs as Kafka models them: resource patterns, access control entries, bindings, the
filters DescribeAcls/DeleteAcls match them with, and Kafka's JSON for storing them. Sans-I/O
and shared by the broker (authorizer, storage, handlers) and the clients (admin, CLI), as
Kafka's org.apache.kafka.common.acl is.

The enum codes are the wire codes (int8) of Kafka's `ResourceType`, `PatternType`,
`AclOperation` and `AclPermissionType`. Names read from text (the CLI, ZooKeeper's JSON) are
matched the way Kafka's SecurityUtils does: PascalCase ("DescribeConfigs") or the enum name
("DESCRIBE_CONFIGS"), case-insensitively.
"""
from __future__ import annotations

import enum
import json
from typing import Iterable, NamedTuple

CLUSTER_NAME = "kafka-cluster"         # the only name a CLUSTER resource has
WILDCARD = "*"                         # a LITERAL resource name, or host, matching everything
WILDCARD_PRINCIPAL = "User:*"


class _Named(enum.IntEnum):
    @property
    def pascal(self) -> str:
        """Kafka's SecurityUtils.toPascalCase of the name: TRANSACTIONAL_ID -> TransactionalId."""
        return "".join(part.capitalize() for part in self.name.split("_"))

    @classmethod
    def parse(cls, text):
        """A code, the enum name or its PascalCase form (any case); ValueError otherwise."""
        if isinstance(text, cls):
            return text
        if isinstance(text, int):
            return cls(text)
        key = str(text).strip().replace("_", "").replace("-", "").upper()
        for member in cls:
            if member.name.replace("_", "") == key:
                return member
        choices = ", ".join(m.pascal for m in cls if m.value > 1)
        raise ValueError(f"{text!r} is not a {cls.__name__} (one of {choices})")

    @classmethod
    def from_code(cls, code: int):
        """The member with this wire code; UNKNOWN for codes this broker does not know."""
        try:
            return cls(code)
        except ValueError:
            return cls(0)


class ResourceType(_Named):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(_Named):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(_Named):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(_Named):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


Op = AclOperation
RT = ResourceType

# What each resource type supports (Kafka's AclEntry.supportedOperations): the operations a
# KIP-430 authorized-operations bitfield is computed over.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    RT.TOPIC: (Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE, Op.DELETE, Op.ALTER,
               Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    RT.GROUP: (Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    RT.CLUSTER: (Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS,
                 Op.IDEMPOTENT_WRITE, Op.ALTER, Op.DESCRIBE),
    RT.TRANSACTIONAL_ID: (Op.DESCRIBE, Op.WRITE),
    RT.DELEGATION_TOKEN: (Op.DESCRIBE,),
    RT.USER: (Op.CREATE_TOKENS, Op.DESCRIBE_TOKENS),
}


class ResourcePattern(NamedTuple):
    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def __str__(self) -> str:
        return f"{self.resource_type.pascal}:{self.pattern_type.name}:{self.name}"


class AccessControlEntry(NamedTuple):
    principal: str                     # "User:alice", or "User:*" for everyone
    host: str                          # an IP address as text, or "*"
    operation: AclOperation
    permission: AclPermissionType

    def __str__(self) -> str:
        return (f"{self.principal} has {self.permission.name} permission for operations: "
                f"{self.operation.pascal} from hosts: {self.host}")


class AclBinding(NamedTuple):
    pattern: ResourcePattern
    entry: AccessControlEntry


def binding(resource_type, name: str, pattern_type, principal: str, host: str, operation,
            permission) -> AclBinding:
    """An AclBinding from names or codes (tests, CLI, admin client)."""
    return AclBinding(
        ResourcePattern(ResourceType.parse(resource_type), name, PatternType.parse(pattern_type)),
        AccessControlEntry(principal, host, AclOperation.parse(operation),
                           AclPermissionType.parse(permission)))


def binding_problem(b: AclBinding) -> str | None:
    """Why this binding cannot be stored, or None. Covers what Kafka's request classes,
    AclApis and the authorizer refuse: UNKNOWN or filter-only (ANY, MATCH) values, a
    principal that is not "<type>:<name>", an empty name, a CLUSTER resource not named
    kafka-cluster, and '/' in a name (it becomes a ZooKeeper path element)."""
    p, e = b.pattern, b.entry
    if p.resource_type in (RT.UNKNOWN, RT.ANY):
        return f"resource type {p.resource_type.name} is not a concrete resource type"
    if p.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"pattern type {p.pattern_type.name} cannot be stored (LITERAL or PREFIXED)"
    if e.operation in (Op.UNKNOWN, Op.ANY):
        return f"operation {e.operation.name} cannot be stored"
    if e.permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return f"permission type {e.permission.name} cannot be stored (ALLOW or DENY)"
    kind, sep, who = (e.principal or "").partition(":")
    if not sep or not kind or not who:
        return (f"principal {e.principal!r} must look like 'User:<name>' (or 'User:*' for "
                "every principal)")
    if e.host is None or e.host == "":
        return "host must be an IP address or '*'"
    if p.name == "":
        return "Invalid empty resource name"
    if p.resource_type == RT.CLUSTER and p.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if "/" in p.name:
        return f"ACL binding contains invalid resource name: {p.name}"
    return None


# -- filters (DescribeAcls, DeleteAcls) ---------------------------------------------------------

class ResourcePatternFilter(NamedTuple):
    resource_type: ResourceType        # ANY: every type
    name: str | None                   # None: every name
    pattern_type: PatternType          # ANY, MATCH, LITERAL or PREFIXED

    def matches(self, p: ResourcePattern) -> bool:
        """Kafka's ResourcePatternFilter.matches: ANY = any pattern type with exactly this
        name; MATCH = the patterns that would apply to a resource of this name (the literal
        name, the literal '*', every prefix of it)."""
        if self.resource_type != RT.ANY and self.resource_type != p.resource_type:
            return False
        pt = self.pattern_type
        if pt not in (PatternType.ANY, PatternType.MATCH) and pt != p.pattern_type:
            return False
        if self.name is None:
            return True
        if pt == PatternType.ANY or pt == p.pattern_type:
            return self.name == p.name
        if p.pattern_type == PatternType.LITERAL:
            return self.name == p.name or p.name == WILDCARD
        return self.name.startswith(p.name)

    def exact_patterns(self) -> list[ResourcePattern]:
        """The patterns this filter can only mean, when it names one resource of one type
        (ANY = its literal and prefixed forms); [] when it may match many."""
        if self.resource_type == RT.ANY or self.name is None:
            return []
        if self.pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
            return [ResourcePattern(self.resource_type, self.name, self.pattern_type)]
        if self.pattern_type == PatternType.ANY:
            return [ResourcePattern(self.resource_type, self.name, PatternType.LITERAL),
                    ResourcePattern(self.resource_type, self.name, PatternType.PREFIXED)]
        return []


class AccessControlEntryFilter(NamedTuple):
    principal: str | None              # None: any (exact text otherwise: no wildcard logic)
    host: str | None
    operation: AclOperation            # ANY: any
    permission: AclPermissionType      # ANY: any

    def matches(self, e: AccessControlEntry) -> bool:
        return ((self.principal is None or self.principal == e.principal)
                and (self.host is None or self.host == e.host)
                and (self.operation == Op.ANY or self.operation == e.operation)
                and (self.permission == AclPermissionType.ANY
                     or self.permission == e.permission))


class AclBindingFilter(NamedTuple):
    pattern: ResourcePatternFilter
    entry: AccessControlEntryFilter

    def matches(self, b: AclBinding) -> bool:
        return self.pattern.matches(b.pattern) and self.entry.matches(b.entry)


ANY_FILTER = AclBindingFilter(ResourcePatternFilter(RT.ANY, None, PatternType.ANY),
                              AccessControlEntryFilter(None, None, Op.ANY,
                                                       AclPermissionType.ANY))


def filter_problem(f: AclBindingFilter) -> str | None:
    """Why a filter is invalid (Kafka refuses UNKNOWN elements), or None."""
    for what, value in (("resource type", f.pattern.resource_type),
                        ("pattern type", f.pattern.pattern_type),
                        ("operation", f.entry.operation),
                        ("permission type", f.entry.permission)):
        if value == 0:
            return f"the filter's {what} is UNKNOWN (a code this broker does not know)"
    return None


# -- Kafka's JSON (a ZooKeeper ACL znode, AclEntry.toJsonCompatibleMap) ------------------------

def entries_to_dicts(entries: Iterable[AccessControlEntry]) -> list[dict]:
    """[{"principal","permissionType","operation","host"}...] in Kafka's spelling, sorted so
    the same set always gives the same bytes."""
    return [{"principal": e.principal, "permissionType": e.permission.pascal,
             "operation": e.operation.pascal, "host": e.host}
            for e in sorted(entries, key=_entry_order)]


def entries_from_dicts(items) -> frozenset[AccessControlEntry]:
    out = set()
    for item in items or []:
        out.add(AccessControlEntry(str(item["principal"]), str(item["host"]),
                                   AclOperation.parse(item["operation"]),
                                   AclPermissionType.parse(item["permissionType"])))
    return frozenset(out)


def entries_to_json(entries: Iterable[AccessControlEntry]) -> bytes:
    """An ACL znode's data: {"version":1,"acls":[...]}."""
    return json.dumps({"version": 1, "acls": entries_to_dicts(entries)},
                      separators=(",", ":")).encode()


def entries_from_json(data: bytes | str | None) -> frozenset[AccessControlEntry]:
    """The entries of an ACL znode (empty for no data); ValueError for anything else."""
    if not data:
        return frozenset()
    doc = json.loads(data)
    if not isinstance(doc, dict) or doc.get("version") != 1:
        raise ValueError(f"ACL JSON must be an object with version 1, got {str(doc)[:80]!r}")
    return entries_from_dicts(doc.get("acls"))


def _entry_order(e: AccessControlEntry):
    return (e.principal, e.host, int(e.operation), int(e.permission))


def binding_order(b: AclBinding):
    p = b.pattern
    return (int(p.resource_type), int(p.pattern_type), p.name) + _entry_order(b.entry)
