"""The authorizer: Kafka's AclAuthorizer decision over the ACLs this broker holds in memory.

Decision for (principal, host, operation, resource) with a LITERAL resource name:
1. a principal listed in `super.users` may do anything (as may BROKER_SELF, the broker's own
   in-process requests);
2. the ACLs that apply are those on the literal name, on the literal `*`, and on every
   PREFIXED pattern that is a prefix of the name;
3. none apply: `allow.everyone.if.no.acl.found` decides (default false: deny);
4. a matching DENY denies; otherwise a matching ALLOW allows; otherwise deny. An entry
   matches when its principal is the caller or `User:*`, its host is the caller's IP or `*`,
   and its operation is the one asked or ALL. ALLOW of READ, WRITE, DELETE or ALTER also
   allows DESCRIBE; ALLOW of ALTER_CONFIGS allows DESCRIBE_CONFIGS (never the reverse, and
   DENY implies nothing).

Decisions are on the produce and fetch paths, so ACLs are indexed by resource (a dict per
literal name, and per prefix length for prefixed patterns) and every decision is cached per
(principal, host, operation, resource type, name) until the ACLs change.

Denials are logged at INFO on the `gregor.authorizer` logger (as Kafka's
`kafka.authorizer.logger`), naming principal, operation, host, resource and request;
allowed decisions at DEBUG when first made (Kafka logs every one; a cached repeat is not
logged again until the ACLs change).
"""
from __future__ import annotations

import ipaddress
import logging
from typing import Iterable

from ...protocol.acl import (SUPPORTED_OPERATIONS, WILDCARD, WILDCARD_PRINCIPAL,
                             AccessControlEntry, AclBinding, AclBindingFilter, AclOperation,
                             AclPermissionType, PatternType, ResourcePattern, ResourceType,
                             binding_order)
from .principal import BROKER_SELF, KafkaPrincipal

audit = logging.getLogger("gregor.authorizer")

Op = AclOperation
ALLOW = AclPermissionType.ALLOW
DENY = AclPermissionType.DENY
LITERAL = PatternType.LITERAL
PREFIXED = PatternType.PREFIXED

# Names accepted in authorizer.class.name: Kafka's ZooKeeper-mode and KRaft authorizers
# (configurations written for Kafka keep working) and gregor's own name for the same thing.
AUTHORIZER_CLASS_NAMES = frozenset({
    "kafka.security.authorizer.AclAuthorizer",
    "kafka.security.auth.SimpleAclAuthorizer",
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "gregor.broker.security.authorizer.AclAuthorizer",
})

# ALLOW of these also allows the key (Kafka's AclAuthorizer.allowAclExists).
_ALLOWED_BY = {
    Op.DESCRIBE: frozenset({Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.ALL}),
    Op.DESCRIBE_CONFIGS: frozenset({Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, Op.ALL}),
}
# A decision cache larger than this is dropped and refilled: a client walking through
# millions of topic names must not grow the broker's memory without bound.
MAX_CACHED_DECISIONS = 100_000


def parse_super_users(text) -> frozenset[KafkaPrincipal]:
    """`super.users`: "User:admin;User:CN=broker,O=x" (semicolon-separated, blanks ignored)."""
    out = set()
    for part in str(text or "").split(";"):
        part = part.strip()
        if part:
            out.add(KafkaPrincipal.parse(part))
    return frozenset(out)


def normal_host(host: str) -> str:
    """One spelling per address: Java prints IPv6 loopback 0:0:0:0:0:0:0:1 where Python
    prints ::1, and a dual-stack socket shows IPv4 clients as ::ffff:a.b.c.d (Java: a.b.c.d).
    Names that are not addresses (and '*') stay as they are."""
    if not host or host == WILDCARD:
        return host
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return host
    if addr.version == 6 and addr.ipv4_mapped is not None:
        return str(addr.ipv4_mapped)
    return str(addr)


class _Rule:
    """One entry as the decision reads it (host normalized once, at indexing)."""
    __slots__ = ("principal", "host", "operation", "permission")

    def __init__(self, e: AccessControlEntry):
        self.principal = e.principal
        self.host = normal_host(e.host)
        self.operation = e.operation
        self.permission = e.permission


class AclAuthorizer:
    def __init__(self, super_users: Iterable[KafkaPrincipal] = (),
                 allow_everyone_if_no_acl_found: bool = False):
        self.super_users = frozenset(super_users)
        self.allow_everyone = bool(allow_everyone_if_no_acl_found)
        self._acls: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
        self._literal: dict[tuple[ResourceType, str], tuple[_Rule, ...]] = {}
        self._prefixed: dict[ResourceType, dict[str, tuple[_Rule, ...]]] = {}
        self._prefix_lengths: dict[ResourceType, tuple[int, ...]] = {}
        self._cache: dict[tuple, bool] = {}
        self._hosts: dict[str, str] = {}

    @classmethod
    def from_config(cls, config) -> "AclAuthorizer":
        return cls(parse_super_users(config.get("super.users")),
                   bool(config.get("allow.everyone.if.no.acl.found")))

    # -- the ACLs held ----------------------------------------------------------------------

    @property
    def patterns(self) -> list[ResourcePattern]:
        return list(self._acls)

    def entries(self, pattern: ResourcePattern) -> frozenset[AccessControlEntry]:
        return self._acls.get(pattern, frozenset())

    def set_entries(self, pattern: ResourcePattern,
                    entries: Iterable[AccessControlEntry]) -> None:
        """The ACLs of one resource pattern are now `entries` (none: the pattern is gone)."""
        entries = frozenset(entries)
        if self._acls.get(pattern, frozenset()) == entries:
            return
        if entries:
            self._acls[pattern] = entries
        else:
            self._acls.pop(pattern, None)
        rules = tuple(_Rule(e) for e in entries)
        rtype = pattern.resource_type
        if pattern.pattern_type == LITERAL:
            key = (rtype, pattern.name)
            if rules:
                self._literal[key] = rules
            else:
                self._literal.pop(key, None)
        elif pattern.pattern_type == PREFIXED:
            table = self._prefixed.setdefault(rtype, {})
            if rules:
                table[pattern.name] = rules
            else:
                table.pop(pattern.name, None)
            self._prefix_lengths[rtype] = tuple(sorted({len(p) for p in table}))
        # a new dict, not clear(): connections' memos of allowed decisions (checks.py) are
        # tied to the dict they were made under and drop themselves when it is replaced
        self._cache = {}

    def replace_all(self, acls: dict[ResourcePattern, frozenset[AccessControlEntry]]) -> None:
        for pattern in [p for p in self._acls if p not in acls]:
            self.set_entries(pattern, ())
        for pattern, entries in acls.items():
            self.set_entries(pattern, entries)

    def acls(self, flt: AclBindingFilter) -> list[AclBinding]:
        """The bindings a DescribeAcls filter selects, in a stable order."""
        out = [AclBinding(p, e) for p, entries in self._acls.items()
               if flt.pattern.matches(p) for e in entries if flt.entry.matches(e)]
        out.sort(key=binding_order)
        return out

    def __len__(self) -> int:
        return sum(len(v) for v in self._acls.values())

    # -- decisions --------------------------------------------------------------------------

    def authorize(self, principal: KafkaPrincipal, host: str, op: AclOperation,
                  rtype: ResourceType, name: str, *, log_denied: bool = True,
                  request: str = "") -> bool:
        if principal is BROKER_SELF:
            return True
        # ints, not the enums: an IntEnum hashes through Python code
        key = (principal, host, op._value_, rtype._value_, name)
        allowed = self._cache.get(key)
        if allowed is None:
            allowed = self._decide(principal, self._host(host), op, rtype, name)
            if len(self._cache) >= MAX_CACHED_DECISIONS:
                self._cache = {}
            self._cache[key] = allowed
            if allowed and audit.isEnabledFor(logging.DEBUG):
                # allowed decisions are logged when made, not on every cached repeat: the
                # hot path does not pay for a logger check
                _log(logging.DEBUG, principal, True, op, host, rtype, name, request)
        if not allowed and log_denied:
            _log(logging.INFO, principal, False, op, host, rtype, name, request)
        return allowed

    def _host(self, host: str) -> str:
        h = self._hosts.get(host)
        if h is None:
            if len(self._hosts) > 10_000:
                self._hosts.clear()
            h = self._hosts[host] = normal_host(host)
        return h

    def _decide(self, principal: KafkaPrincipal, host: str, op: AclOperation,
                rtype: ResourceType, name: str) -> bool:
        if principal in self.super_users:
            return True
        rules = self._matching(rtype, name)
        if not rules:
            return self.allow_everyone
        who = str(principal)
        for r in rules:
            if r.permission == DENY and (r.operation == op or r.operation == Op.ALL) and \
                    (r.principal == who or r.principal == WILDCARD_PRINCIPAL) and \
                    (r.host == host or r.host == WILDCARD):
                return False
        allowed_by = _ALLOWED_BY.get(op)
        for r in rules:
            if r.permission == ALLOW and \
                    (r.operation == op or r.operation == Op.ALL or
                     (allowed_by is not None and r.operation in allowed_by)) and \
                    (r.principal == who or r.principal == WILDCARD_PRINCIPAL) and \
                    (r.host == host or r.host == WILDCARD):
                return True
        return False

    def _matching(self, rtype: ResourceType, name: str) -> list[_Rule]:
        out: list[_Rule] = []
        exact = self._literal.get((rtype, name))
        if exact:
            out.extend(exact)
        if name != WILDCARD:
            wild = self._literal.get((rtype, WILDCARD))
            if wild:
                out.extend(wild)
        table = self._prefixed.get(rtype)
        if table:
            for n in self._prefix_lengths[rtype]:
                if n > len(name):
                    break
                hit = table.get(name[:n])
                if hit:
                    out.extend(hit)
        return out

    def authorized_operations(self, principal: KafkaPrincipal, host: str,
                              rtype: ResourceType, name: str) -> int:
        """KIP-430: a bitfield with bit (1 << code) for each supported operation allowed."""
        bits = 0
        for op in SUPPORTED_OPERATIONS[rtype]:
            if self.authorize(principal, host, op, rtype, name, log_denied=False):
                bits |= 1 << int(op)
        return _int32(bits)

    def authorize_by_resource_type(self, principal: KafkaPrincipal, host: str,
                                   op: AclOperation, rtype: ResourceType, *,
                                   request: str = "") -> bool:
        """KIP-679: may the principal do op on at least one resource of this type? (Kafka's
        AclAuthorizer.authorizeByResourceType: used for the idempotent producer's
        InitProducerId: WRITE on any topic.) Cached like any decision."""
        if principal is BROKER_SELF:
            return True
        key = (principal, host, op._value_, rtype._value_, None)
        allowed = self._cache.get(key)
        if allowed is None:
            allowed = self._decide_by_type(principal, self._host(host), op, rtype)
            self._cache[key] = allowed
        if not allowed:
            _log(logging.INFO, principal, False, op, host, rtype, None, request)
        return allowed

    def _decide_by_type(self, principal, host, op, rtype) -> bool:
        if principal in self.super_users:
            return True
        who = str(principal)
        names = {(DENY, LITERAL): set(), (DENY, PREFIXED): set(),
                 (ALLOW, LITERAL): set(), (ALLOW, PREFIXED): set()}
        for pattern, entries in self._acls.items():
            if pattern.resource_type != rtype:
                continue
            for e in entries:
                if (e.operation == op or e.operation == Op.ALL) and \
                        (e.principal == who or e.principal == WILDCARD_PRINCIPAL) and \
                        (normal_host(e.host) == host or e.host == WILDCARD):
                    names[(e.permission, pattern.pattern_type)].add(pattern.name)
        deny_lit, deny_pre = names[(DENY, LITERAL)], names[(DENY, PREFIXED)]
        allow_lit, allow_pre = names[(ALLOW, LITERAL)], names[(ALLOW, PREFIXED)]
        if WILDCARD in deny_lit:
            return False
        if self.allow_everyone:
            return True
        if not deny_lit and not deny_pre:
            return bool(allow_lit or allow_pre)

        def dominated(name: str) -> bool:       # a DENY prefix covers it (or equals it)
            return any(name[:n] in deny_pre for n in range(len(name) + 1))

        if any(not dominated(p) for p in allow_pre):
            return True
        return any(n == WILDCARD or (n not in deny_lit and not dominated(n)) for n in allow_lit)


def _int32(bits: int) -> int:
    return bits - (1 << 32) if bits >= 1 << 31 else bits


def _log(level, principal, allowed, op, host, rtype, name, request) -> None:
    resource = f"{rtype.pascal}:LITERAL:{name}" if name is not None else \
        f"{rtype.pascal}:ANY (any resource of the type)"
    audit.log(level, "Principal = %s is %s operation = %s from host = %s on resource = %s%s",
              principal, "Allowed" if allowed else "Denied", op.pascal, host or "(in-process)",
              resource, f" for request = {request}" if request else "")
