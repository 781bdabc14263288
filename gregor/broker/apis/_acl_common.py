"""What the ACL API handlers share (Kafka's AclApis): turning request fields into filters
and bindings, grouping bindings by resource pattern, and the refusals every one of them
gives (not allowed on the cluster; no authorizer)."""
from __future__ import annotations

from ...protocol.errors import ErrorCode
from ...protocol.acl import (AccessControlEntry, AccessControlEntryFilter, AclBinding,
                             AclBindingFilter, AclOperation, AclPermissionType, PatternType,
                             ResourcePattern, ResourcePatternFilter, ResourceType)
from ..security.checks import cluster_denied

E = ErrorCode
NO_AUTHORIZER = "No Authorizer is configured on the broker"


def refusal(broker, ctx, op: AclOperation) -> tuple[int, str] | None:
    """(error code, message) when the request cannot be served at all: the principal may not
    do op on the cluster (CLUSTER_AUTHORIZATION_FAILED; checked first, as Kafka does), or
    there is no authorizer (SECURITY_DISABLED)."""
    denied = cluster_denied(broker, ctx, op)
    if denied is not None:
        return E.CLUSTER_AUTHORIZATION_FAILED, denied
    if broker.acl_service is None:
        return E.SECURITY_DISABLED, (NO_AUTHORIZER + " (set authorizer.class.name to "
                                     "kafka.security.authorizer.AclAuthorizer)")
    return None


def filter_of(f: dict) -> AclBindingFilter:
    """A DescribeAcls request / DeleteAcls filter entry as a filter. Codes this broker does
    not know become UNKNOWN, which filter_problem() refuses."""
    return AclBindingFilter(
        ResourcePatternFilter(ResourceType.from_code(f["resource_type_filter"]),
                              f["resource_name_filter"],
                              PatternType.from_code(f["pattern_type_filter"])),
        AccessControlEntryFilter(f["principal_filter"], f["host_filter"],
                                 AclOperation.from_code(f["operation"]),
                                 AclPermissionType.from_code(f["permission_type"])))


def binding_of(c: dict) -> AclBinding:
    return AclBinding(
        ResourcePattern(ResourceType.from_code(c["resource_type"]), c["resource_name"],
                        PatternType.from_code(c["resource_pattern_type"])),
        AccessControlEntry(c["principal"], c["host"], AclOperation.from_code(c["operation"]),
                           AclPermissionType.from_code(c["permission_type"])))


def binding_fields(b: AclBinding) -> dict:
    """A binding as the flat fields of a DeleteAcls matching ACL."""
    p, e = b.pattern, b.entry
    return {"resource_type": int(p.resource_type), "resource_name": p.name,
            "pattern_type": int(p.pattern_type), "principal": e.principal, "host": e.host,
            "operation": int(e.operation), "permission_type": int(e.permission)}


def resources_of(bindings: list[AclBinding]) -> list[dict]:
    """DescribeAcls' resources array: bindings grouped by resource pattern (order kept)."""
    grouped: dict[ResourcePattern, list[dict]] = {}
    for b in bindings:
        e = b.entry
        grouped.setdefault(b.pattern, []).append(
            {"principal": e.principal, "host": e.host, "operation": int(e.operation),
             "permission_type": int(e.permission)})
    return [{"resource_type": int(p.resource_type), "resource_name": p.name,
             "pattern_type": int(p.pattern_type), "acls": acls} for p, acls in grouped.items()]
