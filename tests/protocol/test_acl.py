"""The ACL model: Kafka's filter semantics (ResourcePatternFilter / AccessControlEntryFilter),
what a binding may contain, and Kafka's JSON (AclEntry.toJsonCompatibleMap / fromBytes)."""
from __future__ import annotations

import json

import pytest

from gregor.protocol.acl import (AccessControlEntry, AccessControlEntryFilter,
                                 AclBinding, AclBindingFilter, AclOperation as Op,
                                 AclPermissionType as Perm, PatternType as PT,
                                 ResourcePattern, ResourcePatternFilter,
                                 ResourceType as RT, binding, binding_problem,
                                 entries_from_json, entries_to_json, filter_problem)


def pat(name, pt=PT.LITERAL, rt=RT.TOPIC):
    return ResourcePattern(rt, name, pt)


def pf(name, pt, rt=RT.TOPIC):
    return ResourcePatternFilter(rt, name, pt)


@pytest.mark.parametrize("flt,pattern,expected", [
    (pf(None, PT.ANY, RT.ANY), pat("x"), True),
    (pf("x", PT.ANY, RT.ANY), pat("x", rt=RT.GROUP), True),
    (pf("x", PT.ANY), pat("x", PT.PREFIXED), True),             # ANY: exact name, any type
    (pf("x", PT.ANY), pat("xy", PT.PREFIXED), False),
    (pf("x", PT.ANY), pat("*"), False),
    (pf("x", PT.LITERAL), pat("x"), True),
    (pf("x", PT.LITERAL), pat("x", PT.PREFIXED), False),
    (pf("*", PT.LITERAL), pat("*"), True),
    (pf("x", PT.LITERAL), pat("*"), False),                     # LITERAL is exact
    (pf("x", PT.PREFIXED), pat("x", PT.PREFIXED), True),
    (pf("xyz", PT.PREFIXED), pat("x", PT.PREFIXED), False),
    (pf("xyz", PT.MATCH), pat("xyz"), True),                    # MATCH: what applies to xyz
    (pf("xyz", PT.MATCH), pat("*"), True),
    (pf("xyz", PT.MATCH), pat("x", PT.PREFIXED), True),
    (pf("xyz", PT.MATCH), pat("xyz", PT.PREFIXED), True),
    (pf("xyz", PT.MATCH), pat("xyzz", PT.PREFIXED), False),
    (pf("xyz", PT.MATCH), pat("xy"), False),
    (pf(None, PT.MATCH), pat("anything", PT.PREFIXED), True),
    (pf("x", PT.LITERAL, RT.GROUP), pat("x"), False),
])
def test_resource_pattern_filter(flt, pattern, expected):
    assert flt.matches(pattern) is expected


def test_entry_filter_is_exact_no_wildcard_logic():
    e = AccessControlEntry("User:alice", "10.0.0.1", Op.READ, Perm.ALLOW)
    assert AccessControlEntryFilter(None, None, Op.ANY, Perm.ANY).matches(e)
    assert AccessControlEntryFilter("User:alice", "10.0.0.1", Op.READ, Perm.ALLOW).matches(e)
    assert not AccessControlEntryFilter("User:*", None, Op.ANY, Perm.ANY).matches(e)
    assert not AccessControlEntryFilter(None, "*", Op.ANY, Perm.ANY).matches(e)
    assert not AccessControlEntryFilter(None, None, Op.ALL, Perm.ANY).matches(e)
    assert not AccessControlEntryFilter(None, None, Op.ANY, Perm.DENY).matches(e)


def test_exact_patterns_of_filters():
    assert pf("x", PT.ANY).exact_patterns() == [pat("x"), pat("x", PT.PREFIXED)]
    assert pf("x", PT.PREFIXED).exact_patterns() == [pat("x", PT.PREFIXED)]
    assert pf("x", PT.MATCH).exact_patterns() == []
    assert pf(None, PT.LITERAL).exact_patterns() == []
    assert pf("x", PT.LITERAL, RT.ANY).exact_patterns() == []


@pytest.mark.parametrize("b,problem", [
    (binding("topic", "t", "literal", "User:a", "*", "read", "allow"), None),
    (binding("cluster", "kafka-cluster", "literal", "User:a", "*", "alter", "allow"), None),
    (binding("topic", "", "literal", "User:a", "*", "read", "allow"),
     "Invalid empty resource name"),
    (binding("cluster", "foobar", "literal", "User:a", "*", "read", "allow"),
     "The only valid name for the CLUSTER resource is kafka-cluster"),
    (binding("topic", "a/b", "literal", "User:a", "*", "read", "allow"), "invalid resource name"),
    (binding("topic", "t", "literal", "alice", "*", "read", "allow"), "must look like"),
    (binding("topic", "t", "literal", "User:", "*", "read", "allow"), "must look like"),
    (binding("topic", "t", "match", "User:a", "*", "read", "allow"), "cannot be stored"),
    (binding("topic", "t", "any", "User:a", "*", "read", "allow"), "cannot be stored"),
    (binding("any", "t", "literal", "User:a", "*", "read", "allow"), "not a concrete"),
    (binding("topic", "t", "literal", "User:a", "*", "any", "allow"), "cannot be stored"),
    (binding("topic", "t", "literal", "User:a", "*", "read", "any"), "cannot be stored"),
    (AclBinding(pat("t", PT.UNKNOWN), AccessControlEntry("User:a", "*", Op.READ, Perm.ALLOW)),
     "cannot be stored"),
    (binding("topic", "t", "literal", "User:a", "", "read", "allow"), "host"),
])
def test_binding_validation(b, problem):
    got = binding_problem(b)
    if problem is None:
        assert got is None
    else:
        assert got is not None and problem in got


def test_filter_with_unknown_elements_is_refused():
    ok = AclBindingFilter(pf(None, PT.ANY, RT.ANY),
                          AccessControlEntryFilter(None, None, Op.ANY, Perm.ANY))
    assert filter_problem(ok) is None
    bad = ok._replace(entry=ok.entry._replace(operation=Op.UNKNOWN))
    assert "operation is UNKNOWN" in filter_problem(bad)
    assert RT.from_code(42) is RT.UNKNOWN and Op.from_code(-1) is Op.UNKNOWN


def test_names_parse_as_kafka_spells_them():
    assert Op.parse("DescribeConfigs") is Op.DESCRIBE_CONFIGS
    assert Op.parse("describe_configs") is Op.DESCRIBE_CONFIGS
    assert Op.parse("IDEMPOTENT_WRITE") is Op.IDEMPOTENT_WRITE
    assert RT.parse("TransactionalId") is RT.TRANSACTIONAL_ID
    assert Perm.parse("Deny") is Perm.DENY
    assert RT.TRANSACTIONAL_ID.pascal == "TransactionalId"
    assert Op.CLUSTER_ACTION.pascal == "ClusterAction"
    with pytest.raises(ValueError, match="not a AclOperation"):
        Op.parse("Fly")


def test_json_is_kafkas_format():
    """The bytes Kafka's AclEntry.toJsonCompatibleMap writes, and reading them back."""
    kafka_written = (b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",'
                     b'"operation":"Read","host":"*"},{"principal":"User:*","permissionType":'
                     b'"Deny","operation":"IdempotentWrite","host":"10.0.0.1"},{"principal":'
                     b'"User:bob","permissionType":"Allow","operation":"DescribeConfigs",'
                     b'"host":"*"}]}')
    entries = entries_from_json(kafka_written)
    assert entries == {
        AccessControlEntry("User:alice", "*", Op.READ, Perm.ALLOW),
        AccessControlEntry("User:*", "10.0.0.1", Op.IDEMPOTENT_WRITE, Perm.DENY),
        AccessControlEntry("User:bob", "*", Op.DESCRIBE_CONFIGS, Perm.ALLOW)}
    ours = json.loads(entries_to_json(entries))
    assert ours["version"] == 1
    assert sorted(ours["acls"], key=lambda a: a["principal"]) == sorted(
        json.loads(kafka_written)["acls"], key=lambda a: a["principal"])
    assert entries_from_json(entries_to_json(entries)) == entries
    assert entries_from_json(b"") == frozenset()
    with pytest.raises(ValueError):
        entries_from_json(b'{"version":2,"acls":[]}')
