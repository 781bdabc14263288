"""ACL management over the single-node store: Kafka's create / delete / describe semantics
(AuthorizerTest's testAddAcls*, testDelete*, testAclsFilter), the file written atomically
and read back, concurrent writers, and changes made outside the broker being picked up."""
from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest

from gregor.protocol.acl import (ANY_FILTER, AccessControlEntry,
                                 AccessControlEntryFilter, AclBinding, AclBindingFilter,
                                 AclOperation as Op, AclPermissionType as Perm,
                                 PatternType as PT, ResourcePattern,
                                 ResourcePatternFilter, ResourceType as RT)
from gregor.broker.security.acl_store import (ACL_FILE, AclService, AclStoreError,
                                              FileAclStore)
from gregor.broker.security.authorizer import AclAuthorizer
from gregor.broker.security.principal import KafkaPrincipal

ALLOW_READ = AccessControlEntry("User:alice", "*", Op.READ, Perm.ALLOW)
ALLOW_WRITE = AccessControlEntry("User:alice", "*", Op.WRITE, Perm.ALLOW)
DENY_READ = AccessControlEntry("User:alice", "*", Op.READ, Perm.DENY)
TOPIC = ResourcePattern(RT.TOPIC, "foo-topic", PT.LITERAL)
WILD = ResourcePattern(RT.TOPIC, "*", PT.LITERAL)
PREFIX = ResourcePattern(RT.TOPIC, "foo-", PT.PREFIXED)
ANY_ENTRY = ANY_FILTER.entry


def run(coro):
    return asyncio.run(coro)


def service(tmp_path) -> AclService:
    a = AclAuthorizer()
    store = FileAclStore(tmp_path)
    a.replace_all(store.load_now())
    return AclService(a, store)


def create(svc, pattern, *entries):
    results = run(svc.create([AclBinding(pattern, e) for e in entries]))
    assert results == [None] * len(entries), results


def exact(pattern) -> ResourcePatternFilter:
    return ResourcePatternFilter(pattern.resource_type, pattern.name, pattern.pattern_type)


def acls_of(svc, pattern) -> set:
    return {b.entry for b in svc.describe(AclBindingFilter(exact(pattern), ANY_ENTRY))}


@pytest.mark.parametrize("pattern", [TOPIC, WILD, PREFIX], ids=["literal", "wildcard", "prefixed"])
def test_add_acls_on_one_pattern_only(tmp_path, pattern):
    svc = service(tmp_path)
    create(svc, pattern, ALLOW_READ, ALLOW_WRITE)
    create(svc, pattern, ALLOW_WRITE, DENY_READ)
    assert acls_of(svc, pattern) == {ALLOW_READ, ALLOW_WRITE, DENY_READ}
    for other in {TOPIC, WILD, PREFIX} - {pattern}:
        assert acls_of(svc, other) == set()


@pytest.mark.parametrize("pattern", [WILD, PREFIX], ids=["wildcard", "prefixed"])
def test_delete_one_then_all(tmp_path, pattern):
    svc = service(tmp_path)
    create(svc, pattern, ALLOW_READ, ALLOW_WRITE)
    one = AclBindingFilter(exact(pattern), AccessControlEntryFilter(
        "User:alice", "*", Op.READ, Perm.ALLOW))
    assert run(svc.delete([one])) == [(None, [AclBinding(pattern, ALLOW_READ)])]
    assert acls_of(svc, pattern) == {ALLOW_WRITE}
    run(svc.delete([AclBindingFilter(exact(pattern), ANY_ENTRY)]))
    assert svc.describe(ANY_FILTER) == []
    assert json.loads((tmp_path / ACL_FILE).read_text())["resources"] == []


def test_acls_filter_and_delete_attribution(tmp_path):
    """Kafka's testAclsFilter (ZooKeeper-mode semantics): a binding matched by several delete
    filters is reported under the first."""
    svc = service(tmp_path)
    alice = "User:alice"
    r1 = ResourcePattern(RT.TOPIC, "foo-1", PT.LITERAL)
    r2 = ResourcePattern(RT.TOPIC, "bar-1", PT.LITERAL)
    prefixed = ResourcePattern(RT.TOPIC, "bar-", PT.PREFIXED)
    acl1 = AclBinding(r1, AccessControlEntry(alice, "*", Op.READ, Perm.ALLOW))
    acl2 = AclBinding(r1, AccessControlEntry(alice, "192.168.0.1", Op.WRITE, Perm.ALLOW))
    acl3 = AclBinding(r2, AccessControlEntry(alice, "*", Op.DESCRIBE, Perm.ALLOW))
    acl4 = AclBinding(prefixed, AccessControlEntry("User:*", "*", Op.READ, Perm.ALLOW))
    assert run(svc.create([acl1, acl2, acl3, acl4])) == [None] * 4
    assert set(svc.describe(ANY_FILTER)) == {acl1, acl2, acl3, acl4}
    assert set(svc.describe(AclBindingFilter(exact(r1), ANY_ENTRY))) == {acl1, acl2}
    assert set(svc.describe(AclBindingFilter(exact(prefixed), ANY_ENTRY))) == {acl4}
    matching = AclBindingFilter(ResourcePatternFilter(RT.ANY, r2.name, PT.MATCH), ANY_ENTRY)
    assert set(svc.describe(matching)) == {acl3, acl4}

    acl1_filter = AclBindingFilter(exact(r1), AccessControlEntryFilter(*acl1.entry))
    filters = [matching, acl1_filter, AclBindingFilter(exact(r2), ANY_ENTRY),
               AclBindingFilter(ResourcePatternFilter(RT.TOPIC, "baz", PT.ANY), ANY_ENTRY)]
    results = run(svc.delete(filters))
    assert [err for err, _ in results] == [None] * 4
    assert set(results[0][1]) == {acl3, acl4}
    assert results[1][1] == [acl1]
    assert results[2][1] == [] and results[3][1] == []
    assert svc.describe(ANY_FILTER) == [acl2]


def test_legacy_filters_never_touch_prefixed(tmp_path):
    """SaslSslAdminIntegrationTest.testLegacyAclOpsNeverAffectOrReturnPrefixed, below the wire."""
    svc = service(tmp_path)
    any_acl = AclBinding(WILD, ALLOW_READ)
    acl2 = AclBinding(ResourcePattern(RT.TOPIC, "mytopic2", PT.LITERAL), ALLOW_WRITE)
    foo = AclBinding(ResourcePattern(RT.TOPIC, "foobar", PT.LITERAL), ALLOW_READ)
    prefixed = AclBinding(ResourcePattern(RT.TOPIC, "mytopic", PT.PREFIXED), ALLOW_READ)
    assert run(svc.create([any_acl, acl2, foo, prefixed])) == [None] * 4
    legacy_all = AclBindingFilter(ResourcePatternFilter(RT.TOPIC, None, PT.LITERAL), ANY_ENTRY)
    assert set(svc.describe(legacy_all)) == {any_acl, acl2, foo}
    run(svc.delete([legacy_all]))
    assert svc.describe(ANY_FILTER) == [prefixed]


def test_invalid_bindings_fail_alone(tmp_path):
    svc = service(tmp_path)
    good = AclBinding(TOPIC, ALLOW_READ)
    bad_cluster = AclBinding(ResourcePattern(RT.CLUSTER, "foobar", PT.LITERAL), ALLOW_READ)
    empty = AclBinding(ResourcePattern(RT.TOPIC, "", PT.LITERAL), ALLOW_READ)
    results = run(svc.create([bad_cluster, good, empty]))
    assert results[1] is None
    assert results[0] == ("INVALID_REQUEST",
                          "The only valid name for the CLUSTER resource is kafka-cluster")
    assert results[2] == ("INVALID_REQUEST", "Invalid empty resource name")
    assert svc.describe(ANY_FILTER) == [good]


def test_the_file_survives_a_new_store_and_is_refused_when_corrupt(tmp_path):
    svc = service(tmp_path)
    create(svc, PREFIX, ALLOW_READ, DENY_READ)
    assert FileAclStore(tmp_path).load_now() == {PREFIX: {ALLOW_READ, DENY_READ}}
    assert not (tmp_path / (ACL_FILE + ".tmp")).exists()
    (tmp_path / ACL_FILE).write_text("{not json")
    with pytest.raises(AclStoreError, match="is not valid ACL JSON.*restore it"):
        FileAclStore(tmp_path).load_now()


def test_concurrent_writers_lose_nothing(tmp_path):
    """Two stores on one directory (a broker and the offline CLI) adding ACLs at once."""
    stores = [FileAclStore(tmp_path), FileAclStore(tmp_path)]

    def writer(k):
        for i in range(40):
            e = AccessControlEntry(f"User:w{k}-{i}", "*", Op.READ, Perm.ALLOW)
            stores[k].modify_now({TOPIC: lambda cur, e=e: cur | {e}})
    threads = [threading.Thread(target=writer, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(FileAclStore(tmp_path).load_now()[TOPIC]) == 80


def test_a_change_made_outside_is_applied_within_a_second(tmp_path):
    async def main():
        svc = service(tmp_path)
        await svc.start()
        alice = KafkaPrincipal("User", "alice")
        assert not svc.authorizer.authorize(alice, "10.0.0.1", Op.READ, RT.TOPIC, "foo-1")
        FileAclStore(tmp_path).modify_now({PREFIX: lambda cur: cur | {ALLOW_READ}})
        deadline = time.monotonic() + 5
        while not svc.authorizer.authorize(alice, "10.0.0.1", Op.READ, RT.TOPIC, "foo-1",
                                           log_denied=False):
            assert time.monotonic() < deadline, "the outside change was not applied"
            await asyncio.sleep(0.05)
        FileAclStore(tmp_path).modify_now({PREFIX: lambda cur: frozenset()})
        while svc.authorizer.authorize(alice, "10.0.0.1", Op.READ, RT.TOPIC, "foo-1"):
            assert time.monotonic() < deadline, "the outside removal was not applied"
            await asyncio.sleep(0.05)
        await svc.close()
    run(main())
