"""What the API handlers call to authorize a request (Kafka's AuthHelper).

Every function takes the broker and the request's context; with no authorizer configured
they allow everything at the cost of one attribute test, so the unsecured hot path does not
pay for security.

    if not allowed(broker, ctx, WRITE, TOPIC, name): ...
    ok = allowed_names(broker, ctx, READ, TOPIC, names)       # the subset allowed
    err = cluster_denied(broker, ctx, CLUSTER_ACTION)         # None, or the error text
"""
from __future__ import annotations

from typing import Iterable

from ...protocol.acl import CLUSTER_NAME, SUPPORTED_OPERATIONS, AclOperation, ResourceType

Op = AclOperation
RT = ResourceType
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = RT.TOPIC, RT.GROUP, RT.CLUSTER, RT.TRANSACTIONAL_ID
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = Op.READ, Op.WRITE, Op.CREATE, Op.DELETE, \
    Op.ALTER, Op.DESCRIBE
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = \
    Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, Op.IDEMPOTENT_WRITE
NO_AUTHORIZED_OPS = -2147483648       # KIP-430 fields when the client did not ask


def allowed(broker, ctx, op: AclOperation, rtype: ResourceType, name: str, *,
            log_denied: bool = True) -> bool:
    a = broker.authorizer
    if a is None:
        return True
    return a.authorize(ctx.principal, ctx.client_host, op, rtype, name,
                       log_denied=log_denied, request=ctx.api.name)


def cluster_allowed(broker, ctx, op: AclOperation, *, log_denied: bool = True) -> bool:
    return allowed(broker, ctx, op, CLUSTER, CLUSTER_NAME, log_denied=log_denied)


def cluster_denied(broker, ctx, op: AclOperation) -> str | None:
    """None when op on the cluster is allowed, else the error message to send."""
    if cluster_allowed(broker, ctx, op):
        return None
    return (f"{ctx.principal} may not {op.name} the cluster ({ctx.api.name} needs "
            f"{op.name} on the CLUSTER resource {CLUSTER_NAME})")


def allowed_names(broker, ctx, op: AclOperation, rtype: ResourceType, names: Iterable[str],
                  *, log_denied: bool = True) -> set[str]:
    """The names among `names` the principal may do op on (each decided once)."""
    a = broker.authorizer
    if a is None:
        return set(names)
    p, h, req = ctx.principal, ctx.client_host, ctx.api.name
    return {n for n in set(names)
            if a.authorize(p, h, op, rtype, n, log_denied=log_denied, request=req)}


_NONE: frozenset = frozenset()


def denied_names(broker, ctx, op: AclOperation, rtype: ResourceType, names: Iterable[str],
                 *, log_denied: bool = True) -> frozenset:
    """The names among `names` the principal may NOT do op on (empty without an authorizer:
    the per-partition loops then cost one set lookup)."""
    a = broker.authorizer
    if a is None:
        return _NONE
    memo = memo_of(a, ctx)
    op_v, rt_v = op._value_, rtype._value_
    out = None                   # a plain loop: this runs on every produce and fetch request
    for n in names:
        if (op_v, rt_v, n) in memo or (out is not None and n in out):
            continue
        if a.authorize(ctx.principal, ctx.client_host, op, rtype, n, log_denied=log_denied,
                       request=ctx.api.name):
            memo[(op_v, rt_v, n)] = True
        else:
            if out is None:
                out = set()
            out.add(n)
    return out or _NONE


def memo_of(a, ctx) -> dict:
    """The connection's memo of allowed decisions: a connection's principal and host do not
    change (re-authentication keeps the principal), so a produce or fetch of a topic it was
    already allowed costs one lookup of (operation, resource type, name). It is valid while
    the authorizer's decision cache is the same dict (replaced on every ACL change); denials
    are never memoised, so each one is still decided and logged. A request with no
    connection (in process) gets a memo of its own."""
    conn = ctx.connection
    if conn is None:
        return {}
    held = conn.authz_memo
    if held is None or held[0] is not a._cache or len(held[1]) > 10_000:
        held = conn.authz_memo = (a._cache, {})
    return held[1]


def denied_topics(broker, ctx, op: AclOperation, names: Iterable[str]) -> frozenset:
    return denied_names(broker, ctx, op, TOPIC, names)


def denied_topic_errors(broker, ctx, op: AclOperation, names: Iterable[str],
                        message: str) -> dict:
    """{topic: TopicAuthorizationFailedError(message)} for the topics op is denied on (the
    per-topic admin APIs' form, see apis/per_topic.py)."""
    from ...protocol.errors import TopicAuthorizationFailedError
    return {n: TopicAuthorizationFailedError(message) for n in denied_topics(broker, ctx, op,
                                                                             names)}


# DescribeConfigs / AlterConfigs resource types: which ACL resource guards each, and the
# error a denial answers (Kafka's ConfigHelper / KafkaApis)
_CONFIG_RESOURCES = {2: (TOPIC, "TOPIC_AUTHORIZATION_FAILED"),
                     4: (CLUSTER, "CLUSTER_AUTHORIZATION_FAILED"),     # broker
                     8: (CLUSTER, "CLUSTER_AUTHORIZATION_FAILED"),     # broker logger
                     16: (CLUSTER, "CLUSTER_AUTHORIZATION_FAILED"),    # client metrics
                     32: (GROUP, "GROUP_AUTHORIZATION_FAILED")}


def config_resource_denied(broker, ctx, config_type: int, name: str, *,
                           alter: bool) -> tuple[int, str] | None:
    """(error code, message) when DESCRIBE_CONFIGS (alter: ALTER_CONFIGS) on the config
    resource is denied; None when allowed or the type is one the handler refuses anyway."""
    if broker.authorizer is None or config_type not in _CONFIG_RESOURCES:
        return None
    from ...protocol.errors import ErrorCode
    rtype, error = _CONFIG_RESOURCES[config_type]
    op = ALTER_CONFIGS if alter else DESCRIBE_CONFIGS
    target = CLUSTER_NAME if rtype == CLUSTER else name
    if allowed(broker, ctx, op, rtype, target):
        return None
    return ErrorCode[error], f"the principal may not {op.name} {rtype.name} {target!r}"


def may_create_topic(broker, ctx, name: str) -> bool:
    """Auto-creating a topic needs CREATE on the cluster, or else CREATE on the topic."""
    return cluster_allowed(broker, ctx, CREATE, log_denied=False) or \
        allowed(broker, ctx, CREATE, TOPIC, name)


def allowed_on_any(broker, ctx, op: AclOperation, rtype: ResourceType) -> bool:
    """KIP-679: op allowed on at least one resource of the type (idempotent producers)."""
    a = broker.authorizer
    if a is None:
        return True
    return a.authorize_by_resource_type(ctx.principal, ctx.client_host, op, rtype,
                                        request=ctx.api.name)


def authorized_operations(broker, ctx, rtype: ResourceType, name: str) -> int:
    """KIP-430 bitfield of the supported operations allowed (all of them without an
    authorizer, as Kafka)."""
    a = broker.authorizer
    if a is None:
        bits = 0
        for op in SUPPORTED_OPERATIONS[rtype]:
            bits |= 1 << int(op)
        return bits
    return a.authorized_operations(ctx.principal, ctx.client_host, rtype, name)


def cluster_authorized_operations(broker, ctx) -> int:
    """KIP-430 cluster field: 0 without DESCRIBE on the cluster (Kafka's AuthHelper)."""
    if not cluster_allowed(broker, ctx, DESCRIBE):
        return 0
    return authorized_operations(broker, ctx, CLUSTER, CLUSTER_NAME)


def describe_scram_credentials_denied(broker, ctx) -> str | None:
    """DescribeUserScramCredentials (50): DESCRIBE on the cluster, else
    CLUSTER_AUTHORIZATION_FAILED with this text (None: allowed)."""
    return cluster_denied(broker, ctx, DESCRIBE)


def alter_scram_credentials_denied(broker, ctx) -> str | None:
    """AlterUserScramCredentials (51): ALTER on the cluster, else
    CLUSTER_AUTHORIZATION_FAILED with this text (None: allowed)."""
    return cluster_denied(broker, ctx, ALTER)


def describe_client_quotas_denied(broker, ctx) -> str | None:
    """DescribeClientQuotas (48): DESCRIBE_CONFIGS on the cluster (None: allowed)."""
    return cluster_denied(broker, ctx, DESCRIBE_CONFIGS)


def alter_client_quotas_denied(broker, ctx) -> str | None:
    """AlterClientQuotas (49): ALTER_CONFIGS on the cluster (None: allowed)."""
    return cluster_denied(broker, ctx, ALTER_CONFIGS)
