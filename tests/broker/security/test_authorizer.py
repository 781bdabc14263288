"""The decision, case by case as Kafka's AuthorizerTest / BaseAuthorizerTest (ZooKeeper-mode
AclAuthorizer) check it: deny wins, wildcard principal / host / resource, prefixed patterns,
implied operations, super users, allow.everyone.if.no.acl.found, authorizeByResourceType."""
from __future__ import annotations

import logging
import uuid

import pytest

from gregor.protocol.acl import (AccessControlEntry, AclOperation as Op,
                                 AclPermissionType as Perm, PatternType,
                                 ResourcePattern, ResourceType as RT)
from gregor.broker.security.authorizer import (AclAuthorizer, normal_host,
                                               parse_super_users)
from gregor.broker.security.principal import ANONYMOUS, BROKER_SELF, KafkaPrincipal

ALICE = KafkaPrincipal("User", "alice")
ROB = KafkaPrincipal("User", "rob")
BATMAN = KafkaPrincipal("User", "batman")
H1, H2 = "192.168.1.1", "192.168.1.2"
TOPIC = ResourcePattern(RT.TOPIC, "topic-" + uuid.uuid4().hex, PatternType.LITERAL)
WILD = ResourcePattern(RT.TOPIC, "*", PatternType.LITERAL)
PREFIX = ResourcePattern(RT.TOPIC, TOPIC.name[:8], PatternType.PREFIXED)
CLUSTER = ResourcePattern(RT.CLUSTER, "kafka-cluster", PatternType.LITERAL)
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = Perm.ALLOW, Perm.DENY
ALLOW_READ = AccessControlEntry("User:alice", "*", Op.READ, ALLOW)
ALLOW_WRITE = AccessControlEntry("User:alice", "*", Op.WRITE, ALLOW)
DENY_READ = AccessControlEntry("User:alice", "*", Op.READ, DENY)
CONCRETE_OPS = [op for op in Op if op not in (Op.UNKNOWN, Op.ANY, Op.ALL)]


def ace(principal, host, op, perm):
    return AccessControlEntry(str(principal), host, op, perm)


def add(a: AclAuthorizer, pattern: ResourcePattern, *entries) -> None:
    a.set_entries(pattern, a.entries(pattern) | set(entries))


def remove(a: AclAuthorizer, pattern: ResourcePattern, *entries) -> None:
    a.set_entries(pattern, a.entries(pattern) - set(entries) if entries else ())


def ok(a, principal, host, op, pattern=TOPIC) -> bool:
    assert pattern.pattern_type == LIT
    return a.authorize(principal, host, op, pattern.resource_type, pattern.name)


def by_type(a, principal, host, op, rtype) -> bool:
    return a.authorize_by_resource_type(principal, host, op, rtype)


@pytest.fixture
def authz():
    return AclAuthorizer(super_users=parse_super_users("User:superuser1; User:superuser2"))


def test_topic_acl(authz):
    add(authz, TOPIC,
        ace(ALICE, H1, Op.READ, ALLOW), ace(ALICE, H2, Op.READ, ALLOW),
        ace(ALICE, H1, Op.READ, DENY), ace(ALICE, H1, Op.WRITE, ALLOW),
        ace(ALICE, "*", Op.DESCRIBE, ALLOW), ace(ROB, "*", Op.READ, ALLOW),
        ace(BATMAN, "*", Op.WRITE, ALLOW))
    assert ok(authz, ALICE, H2, Op.READ)
    assert not ok(authz, ALICE, H1, Op.READ), "the DENY from host1 wins"
    assert ok(authz, ALICE, H1, Op.WRITE)
    assert not ok(authz, ALICE, H2, Op.WRITE), "no ALLOW from host2"
    assert ok(authz, ALICE, H1, Op.DESCRIBE) and ok(authz, ALICE, H2, Op.DESCRIBE)
    assert not ok(authz, ALICE, H1, Op.ALTER) and not ok(authz, ALICE, H2, Op.ALTER)
    # READ or WRITE imply DESCRIBE
    assert ok(authz, ROB, H1, Op.DESCRIBE) and ok(authz, BATMAN, H1, Op.DESCRIBE)
    assert ok(authz, ROB, H1, Op.READ) and ok(authz, BATMAN, H1, Op.WRITE)


def test_deny_takes_precedence(authz):
    add(authz, TOPIC, ace("User:*", "*", Op.ALL, ALLOW), ace(ALICE, "192.168.2.1", Op.ALL, DENY))
    assert not ok(authz, ALICE, "192.168.2.1", Op.READ)
    assert ok(authz, ALICE, "192.168.2.2", Op.READ)


def test_allow_all_access(authz):
    add(authz, TOPIC, ace("User:*", "*", Op.ALL, ALLOW))
    assert ok(authz, KafkaPrincipal("User", "random"), "192.0.4.4", Op.READ)


def test_super_users_have_access_whatever_the_acls(authz):
    add(authz, TOPIC, ace("User:*", "*", Op.ALL, DENY))
    for name in ("superuser1", "superuser2"):
        assert ok(authz, KafkaPrincipal("User", name), "192.0.4.4", Op.READ)
    assert not ok(authz, ALICE, "192.0.4.4", Op.READ)


def test_broker_self_is_always_allowed(authz):
    add(authz, CLUSTER, ace("User:*", "*", Op.ALL, DENY))
    assert ok(authz, BROKER_SELF, "", Op.CLUSTER_ACTION, CLUSTER)
    assert authz.authorize_by_resource_type(BROKER_SELF, "", Op.WRITE, RT.TOPIC)


def test_wildcard_resource_acls(authz):
    assert not ok(authz, ALICE, H1, Op.READ), "no ACLs: fail closed"
    add(authz, WILD, ace(ALICE, H1, Op.READ, ALLOW))
    assert ok(authz, ALICE, H1, Op.READ)
    add(authz, TOPIC, ace(ALICE, H1, Op.WRITE, ALLOW))
    add(authz, WILD, ace(ALICE, H1, Op.WRITE, DENY))
    assert not ok(authz, ALICE, H1, Op.WRITE), "DENY on the wildcard resource wins"


def test_no_acl_found_denies_unless_allow_everyone():
    assert not ok(AclAuthorizer(), ALICE, H1, Op.READ)
    everyone = AclAuthorizer(allow_everyone_if_no_acl_found=True)
    assert ok(everyone, ALICE, H1, Op.READ)
    # ... but only where no ACL applies: an ACL for someone else still closes the resource
    add(everyone, TOPIC, ace(ROB, "*", Op.READ, ALLOW))
    assert not ok(everyone, ALICE, H1, Op.READ)


def test_acl_config_with_whitespace_and_empty_entries():
    users = parse_super_users(" User:a ;; User:b;")
    assert users == {KafkaPrincipal("User", "a"), KafkaPrincipal("User", "b")}
    with pytest.raises(ValueError):
        parse_super_users("admin")


def test_authorize_with_empty_resource_name(authz):
    group = ResourcePattern(RT.GROUP, "", LIT)
    assert not ok(authz, ALICE, H1, Op.READ, group)
    add(authz, ResourcePattern(RT.GROUP, "*", LIT), ALLOW_READ)
    assert ok(authz, ALICE, H1, Op.READ, group)


@pytest.mark.parametrize("parent,implied", [
    (Op.ALL, set(CONCRETE_OPS)),
    (Op.READ, {Op.DESCRIBE}), (Op.WRITE, {Op.DESCRIBE}), (Op.DELETE, {Op.DESCRIBE}),
    (Op.ALTER, {Op.DESCRIBE}), (Op.ALTER_CONFIGS, {Op.DESCRIBE_CONFIGS}),
    (Op.DESCRIBE, set()), (Op.DESCRIBE_CONFIGS, set()), (Op.CREATE, set()),
])
def test_implications_of_allow(authz, parent, implied):
    add(authz, CLUSTER, ace(ALICE, "*", parent, ALLOW))
    for op in CONCRETE_OPS:
        assert ok(authz, ALICE, H1, op, CLUSTER) == (op in implied or op == parent), op


@pytest.mark.parametrize("parent,denied", [
    (Op.ALL, set(CONCRETE_OPS)), (Op.DESCRIBE, set()), (Op.DESCRIBE_CONFIGS, set()),
    (Op.READ, set()),
])
def test_implications_of_deny(authz, parent, denied):
    """DENY implies nothing beyond itself (DENY READ does not deny DESCRIBE)."""
    add(authz, CLUSTER, ace(ALICE, "*", parent, DENY), ace(ALICE, "*", Op.ALL, ALLOW))
    for op in CONCRETE_OPS:
        assert ok(authz, ALICE, H1, op, CLUSTER) != (op in denied or op == parent), op


def test_allowed_by_wildcard_and_prefixed_resources(authz):
    add(authz, WILD, ALLOW_READ)
    assert ok(authz, ALICE, H1, Op.READ)
    other = AclAuthorizer()
    add(other, PREFIX, ALLOW_READ)
    assert ok(other, ALICE, H1, Op.READ)


def test_authorize_with_prefixed_resource_among_many_denies(authz):
    """Kafka's testAuthorizeWithPrefixedResource: unrelated prefixed DENYs do not leak."""
    for name, pt in [("a_other", LIT), ("a_other", PRE), ("foo-" + uuid.uuid4().hex, PRE),
                     ("foo-" + uuid.uuid4().hex + "-zzz", PRE), ("fooo-" + uuid.uuid4().hex, PRE),
                     ("fo-" + uuid.uuid4().hex, PRE), ("fon-", PRE), ("z_other", PRE),
                     ("z_other", LIT)]:
        add(authz, ResourcePattern(RT.TOPIC, name, pt), DENY_READ)
    add(authz, PREFIX, ALLOW_READ)
    assert ok(authz, ALICE, H1, Op.READ)


def test_single_character_resource_acls(authz):
    add(authz, ResourcePattern(RT.TOPIC, "f", LIT), ALLOW_READ)
    assert ok(authz, ALICE, H1, Op.READ, ResourcePattern(RT.TOPIC, "f", LIT))
    assert not ok(authz, ALICE, H1, Op.READ, ResourcePattern(RT.TOPIC, "foo", LIT))
    add(authz, ResourcePattern(RT.TOPIC, "_", PRE), ALLOW_READ)
    assert ok(authz, ALICE, H1, Op.READ, ResourcePattern(RT.TOPIC, "_foo", LIT))
    assert ok(authz, ALICE, H1, Op.READ, ResourcePattern(RT.TOPIC, "_", LIT))
    assert not ok(authz, ALICE, H1, Op.READ, ResourcePattern(RT.TOPIC, "foo_", LIT))


def test_prefixed_deny_applies_to_longer_names_only(authz):
    add(authz, WILD, ace("User:*", "*", Op.ALL, ALLOW))
    add(authz, ResourcePattern(RT.TOPIC, "secret.", PRE), ace("User:*", "*", Op.READ, DENY))
    assert not ok(authz, ALICE, H1, Op.READ, ResourcePattern(RT.TOPIC, "secret.x", LIT))
    assert ok(authz, ALICE, H1, Op.READ, ResourcePattern(RT.TOPIC, "secret", LIT))
    assert ok(authz, ALICE, H1, Op.READ, ResourcePattern(RT.TOPIC, "public", LIT))


def test_wildcard_principal_and_host(authz):
    add(authz, TOPIC, ace("User:*", H1, Op.READ, ALLOW))
    assert ok(authz, ALICE, H1, Op.READ) and ok(authz, ROB, H1, Op.READ)
    assert not ok(authz, ALICE, H2, Op.READ)
    # only User:* is a wildcard: another principal type is a different principal
    add(authz, TOPIC, ace("Group:*", "*", Op.WRITE, ALLOW))
    assert not ok(authz, ALICE, H1, Op.WRITE)
    assert ok(authz, KafkaPrincipal("Group", "*"), H1, Op.WRITE)


def test_hosts_compare_as_addresses():
    assert normal_host("0:0:0:0:0:0:0:1") == normal_host("::1") == "::1"
    assert normal_host("::ffff:10.0.0.1") == "10.0.0.1"
    assert normal_host("*") == "*" and normal_host("host1") == "host1"
    a = AclAuthorizer()
    add(a, TOPIC, ace(ALICE, "0:0:0:0:0:0:0:1", Op.READ, ALLOW))
    assert ok(a, ALICE, "::1", Op.READ)
    assert not ok(a, ALICE, "127.0.0.1", Op.READ)


def test_decisions_follow_changes(authz):
    """The decision cache is invalidated by every change."""
    assert not ok(authz, ALICE, H1, Op.READ)
    add(authz, TOPIC, ALLOW_READ)
    assert ok(authz, ALICE, H1, Op.READ)
    add(authz, PREFIX, DENY_READ)
    assert not ok(authz, ALICE, H1, Op.READ)
    remove(authz, PREFIX)
    assert ok(authz, ALICE, H1, Op.READ)
    authz.replace_all({})
    assert not ok(authz, ALICE, H1, Op.READ) and len(authz) == 0


def test_authorized_operations_bitfield(authz):
    add(authz, TOPIC, ALLOW_READ, ace(ALICE, "*", Op.ALTER_CONFIGS, ALLOW))
    bits = authz.authorized_operations(ALICE, H1, RT.TOPIC, TOPIC.name)
    expected = {Op.READ, Op.DESCRIBE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS}
    assert bits == sum(1 << int(op) for op in expected)
    assert authz.authorized_operations(ROB, H1, RT.TOPIC, TOPIC.name) == 0


def test_denials_are_logged_with_principal_operation_resource_and_host(authz, caplog):
    with caplog.at_level(logging.INFO, logger="gregor.authorizer"):
        authz.authorize(ALICE, H1, Op.WRITE, RT.TOPIC, "orders", request="Produce")
        authz.authorize(ALICE, H1, Op.WRITE, RT.TOPIC, "quiet", log_denied=False)
    lines = [r.getMessage() for r in caplog.records if r.name == "gregor.authorizer"]
    assert lines == ["Principal = User:alice is Denied operation = Write from host = "
                     "192.168.1.1 on resource = Topic:LITERAL:orders for request = Produce"]


def test_decision_cache_is_bounded(authz, monkeypatch):
    import gregor.broker.security.authorizer as mod
    monkeypatch.setattr(mod, "MAX_CACHED_DECISIONS", 10)
    for i in range(50):
        ok(authz, ALICE, H1, Op.READ, ResourcePattern(RT.TOPIC, f"t{i}", LIT))
    assert len(authz._cache) <= 10


# -- authorizeByResourceType (KIP-679) --------------------------------------------------------

def test_by_type_multiple_add_and_remove():
    a = AclAuthorizer()
    r1 = ResourcePattern(RT.TOPIC, "sb1" + uuid.uuid4().hex, LIT)
    allow, deny = ace(ALICE, H1, Op.READ, ALLOW), ace(ALICE, H1, Op.READ, DENY)
    for _ in range(3):
        assert not by_type(a, ALICE, H1, Op.READ, RT.TOPIC)
        add(a, r1, allow)
        assert by_type(a, ALICE, H1, Op.READ, RT.TOPIC)
        for _ in range(3):
            add(a, r1, deny)
            assert not by_type(a, ALICE, H1, Op.READ, RT.TOPIC)
            remove(a, r1, deny)
            assert by_type(a, ALICE, H1, Op.READ, RT.TOPIC)
        remove(a, r1, allow)
        assert not by_type(a, ALICE, H1, Op.READ, RT.TOPIC)


def test_by_type_unrelated_deny_does_not_dominate_allow():
    a = AclAuthorizer()
    user2 = KafkaPrincipal("User", "user2")
    r1 = ResourcePattern(RT.TOPIC, "sb1", LIT)
    r2 = ResourcePattern(RT.TOPIC, "sb2", LIT)
    r3 = ResourcePattern(RT.GROUP, "s", PRE)
    add(a, r1, ace(ALICE, H1, Op.READ, DENY), ace(user2, H1, Op.READ, DENY),
        ace(ALICE, H2, Op.WRITE, DENY), ace(user2, H2, Op.READ, DENY),
        ace(ALICE, H2, Op.READ, ALLOW))
    add(a, r2, ace(ALICE, H2, Op.READ, DENY))
    add(a, r3, ace(ALICE, H2, Op.READ, DENY))
    assert not by_type(a, ALICE, H1, Op.READ, RT.TOPIC)
    assert not by_type(a, ALICE, H1, Op.READ, RT.GROUP)
    assert not by_type(a, ALICE, H1, Op.READ, RT.TRANSACTIONAL_ID)
    assert not by_type(a, ALICE, H1, Op.READ, RT.CLUSTER)
    assert by_type(a, ALICE, H2, Op.READ, RT.TOPIC)


def test_by_type_deny_takes_precedence():
    a = AclAuthorizer()
    r1 = ResourcePattern(RT.TOPIC, "sb1", LIT)
    add(a, r1, ace(ALICE, H1, Op.WRITE, ALLOW))
    assert by_type(a, ALICE, H1, Op.WRITE, RT.TOPIC)
    add(a, r1, ace(ALICE, H1, Op.WRITE, DENY))
    assert not by_type(a, ALICE, H1, Op.WRITE, RT.TOPIC)


def test_by_type_prefixed_deny_dominates():
    a = AclAuthorizer()
    allow, deny = ace(ALICE, H1, Op.READ, ALLOW), ace(ALICE, H1, Op.READ, DENY)

    def g(name):
        return ResourcePattern(RT.GROUP, name, PRE)
    add(a, g("abcde"), allow)
    assert by_type(a, ALICE, H1, Op.READ, RT.GROUP)
    add(a, g("abcd"), deny)
    assert not by_type(a, ALICE, H1, Op.READ, RT.GROUP)
    add(a, g("abc"), allow)
    assert by_type(a, ALICE, H1, Op.READ, RT.GROUP)
    add(a, g("a"), deny)
    assert not by_type(a, ALICE, H1, Op.READ, RT.GROUP)
    add(a, g("ab"), allow)
    assert not by_type(a, ALICE, H1, Op.READ, RT.GROUP)


def test_by_type_wildcard_deny_dominates():
    a = AclAuthorizer()
    allow, deny = ace(ALICE, H1, Op.WRITE, ALLOW), ace(ALICE, H1, Op.WRITE, DENY)
    add(a, ResourcePattern(RT.GROUP, "hello", PRE), allow)
    assert by_type(a, ALICE, H1, Op.WRITE, RT.GROUP)
    add(a, ResourcePattern(RT.GROUP, "*", LIT), deny)
    assert not by_type(a, ALICE, H1, Op.WRITE, RT.GROUP)
    add(a, ResourcePattern(RT.GROUP, "*", LIT), allow)
    assert not by_type(a, ALICE, H1, Op.WRITE, RT.GROUP)
    add(a, ResourcePattern(RT.GROUP, "aloha", LIT), allow)
    assert not by_type(a, ALICE, H1, Op.WRITE, RT.GROUP)


def test_by_type_with_all_operation_host_and_principal():
    a = AclAuthorizer()
    r1 = ResourcePattern(RT.TOPIC, "sb1", LIT)
    add(a, r1, ace(ALICE, H1, Op.WRITE, DENY), ace(ALICE, H1, Op.ALL, ALLOW))
    assert by_type(a, ALICE, H1, Op.READ, RT.TOPIC)
    add(a, r1, ace(ALICE, H1, Op.ALL, DENY))
    assert not by_type(a, ALICE, H1, Op.READ, RT.TOPIC)

    b = AclAuthorizer()
    r2 = ResourcePattern(RT.TOPIC, "sb2", LIT)
    add(b, r1, ace(ALICE, H1, Op.READ, ALLOW))
    assert by_type(b, ALICE, H1, Op.READ, RT.TOPIC)
    add(b, r1, ace(ALICE, "*", Op.READ, DENY))
    assert not by_type(b, ALICE, H1, Op.READ, RT.TOPIC)
    add(b, r2, ace(ALICE, "*", Op.READ, ALLOW))
    assert by_type(b, ALICE, H2, Op.READ, RT.TOPIC)

    c = AclAuthorizer()
    add(c, r1, ace(ALICE, H1, Op.READ, ALLOW))
    add(c, r1, ace("User:*", H1, Op.READ, DENY))
    assert not by_type(c, ALICE, H1, Op.READ, RT.TOPIC)
    add(c, r2, ace("User:*", H1, Op.READ, ALLOW))
    assert by_type(c, ROB, H1, Op.READ, RT.TOPIC)
    add(c, r2, ace("User:*", H1, Op.READ, DENY))
    assert not by_type(c, ROB, H1, Op.READ, RT.TOPIC)


def test_by_type_super_user_and_allow_everyone():
    a = AclAuthorizer(super_users={KafkaPrincipal("User", "root")})
    for rt in (RT.TOPIC, RT.CLUSTER, RT.GROUP, RT.TRANSACTIONAL_ID):
        add(a, ResourcePattern(rt, "*", LIT), ace("User:*", "*", Op.ALL, DENY))
        assert by_type(a, KafkaPrincipal("User", "root"), H1, Op.READ, rt)
    everyone = AclAuthorizer(allow_everyone_if_no_acl_found=True)
    assert by_type(everyone, ANONYMOUS, H1, Op.WRITE, RT.TOPIC)
    add(everyone, ResourcePattern(RT.TOPIC, "x", PRE), ace("User:*", "*", Op.WRITE, DENY))
    assert by_type(everyone, ANONYMOUS, H1, Op.WRITE, RT.TOPIC)
    add(everyone, WILD, ace("User:*", "*", Op.WRITE, DENY))
    assert not by_type(everyone, ANONYMOUS, H1, Op.WRITE, RT.TOPIC)
