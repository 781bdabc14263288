"""The AdminClient's ACL calls (mixed into AdminClient): CreateAcls, DescribeAcls and
DeleteAcls, answered by any broker.

    from gregor.client.admin_acls import acl_binding, acl_filter
    admin.create_acls([acl_binding("topic", "orders", "literal", "User:alice", "*",
                                   "read", "allow")])
    admin.describe_acls(acl_filter(resource_type="topic"))        # [AclBinding]
    admin.delete_acls([acl_filter(resource_type="topic", name="orders")])  # [[AclBinding]]

Bindings and filters are gregor.protocol.acl's AclBinding and AclBindingFilter
(plain named tuples; the helpers above build them from names).
"""
from __future__ import annotations

from ..protocol.acl import (ANY_FILTER, AccessControlEntry, AccessControlEntryFilter,
                            AclBinding, AclBindingFilter, AclOperation,
                            AclPermissionType, PatternType, ResourcePattern,
                            ResourcePatternFilter, ResourceType, binding)
from ..protocol.errors import ErrorCode, error_for_code

_MAX_VERSION = 3


def acl_binding(resource_type, name: str, pattern_type, principal: str, host: str, operation,
                permission) -> AclBinding:
    """An AclBinding from names ("topic", "prefixed", "read", "allow") or codes."""
    return binding(resource_type, name, pattern_type, principal, host, operation, permission)


def acl_filter(resource_type="any", name: str | None = None, pattern_type="any",
               principal: str | None = None, host: str | None = None, operation="any",
               permission="any") -> AclBindingFilter:
    """A filter; None / "any" match everything. pattern_type "match" selects the patterns
    that apply to `name` (literal name, literal '*', prefixes of it)."""
    return AclBindingFilter(
        ResourcePatternFilter(ResourceType.parse(resource_type), name,
                              PatternType.parse(pattern_type)),
        AccessControlEntryFilter(principal, host, AclOperation.parse(operation),
                                 AclPermissionType.parse(permission)))


def _filter_fields(f: AclBindingFilter, version: int, what: str) -> dict:
    pt = f.pattern.pattern_type
    if version == 0:
        if pt == PatternType.ANY:
            pt = PatternType.LITERAL      # all v0 brokers know; Kafka's clients do the same
        elif pt != PatternType.LITERAL:
            raise error_for_code(ErrorCode.UNSUPPORTED_VERSION,
                                 f"cannot {what}: the broker only speaks v0, which knows "
                                 f"LITERAL patterns only (asked {pt.name})")
    return {"resource_type_filter": int(f.pattern.resource_type),
            "resource_name_filter": f.pattern.name, "pattern_type_filter": int(pt),
            "principal_filter": f.entry.principal, "host_filter": f.entry.host,
            "operation": int(f.entry.operation), "permission_type": int(f.entry.permission)}


class AclAdminMethods:
    def _acl_version(self, api: str, timeout: float) -> int:
        version = self._net.api_version(None, api, timeout=timeout)
        if version is None:
            raise error_for_code(ErrorCode.UNSUPPORTED_VERSION,
                                 f"the broker does not support {api}")
        return min(version, _MAX_VERSION)

    def create_acls(self, bindings, timeout: float | None = None) -> None:
        """Create every binding; raises the first failure (naming the binding) after all
        were tried."""
        bindings = [bindings] if isinstance(bindings, AclBinding) else list(bindings)
        timeout = self._timeout(timeout)
        version = self._acl_version("CreateAcls", timeout)
        creations = []
        for b in bindings:
            if version == 0 and b.pattern.pattern_type != PatternType.LITERAL:
                raise error_for_code(ErrorCode.UNSUPPORTED_VERSION,
                                     f"cannot create {b.pattern}: the broker only speaks "
                                     "CreateAcls v0 (LITERAL patterns only)")
            creations.append({
                "resource_type": int(b.pattern.resource_type), "resource_name": b.pattern.name,
                "resource_pattern_type": int(b.pattern.pattern_type),
                "principal": b.entry.principal, "host": b.entry.host,
                "operation": int(b.entry.operation),
                "permission_type": int(b.entry.permission)})
        resp = self._net.request(None, "CreateAcls", {"creations": creations}, version,
                                 timeout)
        for b, r in zip(bindings, resp["results"]):
            if r["error_code"]:
                raise _acl_error(r["error_code"], f"cannot create ACL {b.entry} on {b.pattern}",
                                 r.get("error_message"))

    def describe_acls(self, flt: AclBindingFilter = ANY_FILTER,
                      timeout: float | None = None) -> list[AclBinding]:
        timeout = self._timeout(timeout)
        version = self._acl_version("DescribeAcls", timeout)
        resp = self._net.request(None, "DescribeAcls",
                                 _filter_fields(flt, version, "describe ACLs"), version,
                                 timeout)
        if resp["error_code"]:
            raise _acl_error(resp["error_code"], "cannot describe ACLs",
                             resp.get("error_message"))
        out = []
        for r in resp["resources"]:
            pattern = ResourcePattern(ResourceType.from_code(r["resource_type"]),
                                      r["resource_name"], PatternType.from_code(r["pattern_type"]))
            for a in r["acls"]:
                out.append(AclBinding(pattern, AccessControlEntry(
                    a["principal"], a["host"], AclOperation.from_code(a["operation"]),
                    AclPermissionType.from_code(a["permission_type"]))))
        return out

    def delete_acls(self, filters, timeout: float | None = None) -> list[list[AclBinding]]:
        """Delete what each filter matches; per filter, the bindings it removed."""
        filters = [filters] if isinstance(filters, AclBindingFilter) else list(filters)
        timeout = self._timeout(timeout)
        version = self._acl_version("DeleteAcls", timeout)
        body = {"filters": [_filter_fields(f, version, "delete ACLs") for f in filters]}
        resp = self._net.request(None, "DeleteAcls", body, version, timeout)
        out = []
        for r in resp["filter_results"]:
            if r["error_code"]:
                raise _acl_error(r["error_code"], "cannot delete ACLs", r.get("error_message"))
            out.append([AclBinding(
                ResourcePattern(ResourceType.from_code(m["resource_type"]), m["resource_name"],
                                PatternType.from_code(m["pattern_type"])),
                AccessControlEntry(m["principal"], m["host"],
                                   AclOperation.from_code(m["operation"]),
                                   AclPermissionType.from_code(m["permission_type"])))
                for m in r["matching_acls"]])
        return out


_HINTS = {
    ErrorCode.SECURITY_DISABLED: "the broker has no authorizer: set authorizer.class.name",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "managing ACLs needs ALTER (describing them "
                                            "DESCRIBE) on the cluster, or a super user",
}


def _acl_error(code: int, what: str, message: str | None):
    hint = _HINTS.get(code)
    text = f"{what}: {message or error_for_code(code).message}"
    return error_for_code(code, text + (f" ({hint})" if hint else ""))


__all__ = ["AclAdminMethods", "acl_binding", "acl_filter", "AclBinding", "AclBindingFilter",
           "ANY_FILTER"]
