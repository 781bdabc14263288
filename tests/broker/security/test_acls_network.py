"""ACLs over the network against a `gregor broker` process with an authorizer: gregor's
AdminClient, `gregor acls` online and offline, confluent-kafka's and kafka-python's ACL admin
calls, and durability (kill -9; a broker restarted with a changed ACL set applies it).

PLAINTEXT connections are User:ANONYMOUS: the first ACL (ANONYMOUS may ALTER the cluster
from 127.0.0.1, which also implies DESCRIBE) is created offline on the data directory before
the broker starts, as an operator would with kafka-acls."""
from __future__ import annotations

import subprocess
import sys

import pytest

from gregor.protocol.acl import (AclPermissionType as Perm, PatternType as PT,
                                 ResourceType as RT)
from gregor.client.admin import AdminClient
from gregor.client.admin_acls import acl_binding, acl_filter
from gregor.protocol.errors import ClusterAuthorizationFailedError, InvalidRequestError
from tests.support.broker import REPO_ROOT, BrokerProcess

AUTHZ = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}


def gregor(*args, check=True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "gregor", *args], capture_output=True,
                          text=True, cwd=REPO_ROOT, timeout=60)
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    data = tmp_path_factory.mktemp("acl-broker") / "data"
    gregor("acls", "add", "--allow-principal", "User:ANONYMOUS", "--allow-host", "127.0.0.1",
           "--operation", "Alter", "--cluster", "--data-dir", str(data))
    b = BrokerProcess(data, settings=AUTHZ)
    b.start()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture
def admin(secured):
    a = AdminClient({"bootstrap.servers": secured.bootstrap})
    yield a
    a.close()


def test_admin_client_create_describe_delete(admin, request):
    t = request.node.name
    admin.create_acls([acl_binding("topic", t, "literal", "User:alice", "*", "read", "allow"),
                       acl_binding("topic", t[:6], "prefixed", "User:bob", "10.0.0.1", "write",
                                   "deny")])
    got = admin.describe_acls(acl_filter("topic", t, "match"))
    assert {(b.pattern.name, b.pattern.pattern_type, b.entry.principal) for b in got} == {
        (t, PT.LITERAL, "User:alice"), (t[:6], PT.PREFIXED, "User:bob")}
    removed = admin.delete_acls([acl_filter("topic", t[:6], "prefixed"),
                                 acl_filter("topic", t, "literal", principal="User:nobody")])
    assert [[b.entry.principal for b in r] for r in removed] == [["User:bob"], []]
    assert [b.entry.principal for b in admin.describe_acls(acl_filter("topic", t, "match"))] \
        == ["User:alice"]
    admin.delete_acls([acl_filter("topic", t)])


def test_admin_client_names_the_failure(admin):
    with pytest.raises(InvalidRequestError, match="The only valid name for the CLUSTER resource"):
        admin.create_acls([acl_binding("cluster", "other", "literal", "User:a", "*", "alter",
                                       "allow")])


def test_cli_online_add_list_remove(secured):
    b = ["-b", secured.bootstrap]
    out = gregor("acls", "add", "--allow-principal", "User:carol", "--consumer", "--topic",
                 "cli-orders", "--group", "cli-billing", *b).stdout
    assert "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=cli-orders, " \
           "patternType=LITERAL)`" in out
    listed = gregor("acls", "list", "--principal", "User:carol", *b).stdout
    assert "(principal=User:carol, host=*, operation=READ, permissionType=ALLOW)" in listed
    assert "(principal=User:carol, host=*, operation=DESCRIBE, permissionType=ALLOW)" in listed
    assert "name=cli-billing" in listed
    gregor("acls", "remove", "--topic", "cli-orders", "--group", "cli-billing", "--force", *b)
    assert "carol" not in gregor("acls", "list", *b).stdout


def test_cli_refuses_what_kafka_acls_refuses(secured, tmp_path):
    bad = gregor("acls", "add", "--allow-principal", "User:x", "--operation", "Read",
                 "--cluster", "--data-dir", str(tmp_path), check=False)
    assert bad.returncode != 0 and "ResourceType CLUSTER only supports operations" in bad.stderr
    bad = gregor("acls", "add", "--topic", "t", "--data-dir", str(tmp_path), check=False)
    assert bad.returncode != 0 and "--allow-principal, --deny-principal" in bad.stderr
    bad = gregor("acls", "add", "--allow-principal", "alice", "--topic", "t", "--data-dir",
                 str(tmp_path), check=False)
    assert bad.returncode != 0 and "must look like 'User:<name>'" in bad.stderr


def test_confluent_kafka_acl_admin_calls(secured, request):
    ck = pytest.importorskip("confluent_kafka.admin")
    t = "ck-" + request.node.name[-20:]
    a = ck.AdminClient({"bootstrap.servers": secured.bootstrap})
    binding = ck.AclBinding(ck.ResourceType.TOPIC, t, ck.ResourcePatternType.LITERAL,
                            "User:alice", "*", ck.AclOperation.READ,
                            ck.AclPermissionType.ALLOW)
    prefixed = ck.AclBinding(ck.ResourceType.GROUP, "ck-", ck.ResourcePatternType.PREFIXED,
                             "User:alice", "*", ck.AclOperation.READ,
                             ck.AclPermissionType.ALLOW)
    for fut in a.create_acls([binding, prefixed], request_timeout=15).values():
        assert fut.result() is None
    topic_filter = ck.AclBindingFilter(ck.ResourceType.TOPIC, t, ck.ResourcePatternType.ANY,
                                       None, None, ck.AclOperation.ANY,
                                       ck.AclPermissionType.ANY)
    found = a.describe_acls(topic_filter, request_timeout=15).result()
    assert found == [binding]
    match = ck.AclBindingFilter(ck.ResourceType.ANY, "ck-group", ck.ResourcePatternType.MATCH,
                                None, None, ck.AclOperation.ANY, ck.AclPermissionType.ANY)
    assert a.describe_acls(match, request_timeout=15).result() == [prefixed]
    deleted = a.delete_acls([topic_filter, match], request_timeout=15)
    assert [f.result() for f in deleted.values()] == [[binding], [prefixed]]
    assert a.describe_acls(topic_filter, request_timeout=15).result() == []
    bad = ck.AclBinding(ck.ResourceType.TOPIC, "", ck.ResourcePatternType.LITERAL,
                        "User:alice", "*", ck.AclOperation.READ, ck.AclPermissionType.ALLOW)
    with pytest.raises(ck.KafkaException, match="Invalid empty resource name"):
        list(a.create_acls([bad], request_timeout=15).values())[0].result()


def test_kafka_python_acl_admin_calls(secured, request):
    kadmin = pytest.importorskip("kafka.admin")
    t = "kp-" + request.node.name[-20:]
    a = kadmin.KafkaAdminClient(bootstrap_servers=secured.bootstrap, request_timeout_ms=15000)
    try:
        acl = kadmin.ACL(principal="User:bob", host="*", operation=kadmin.ACLOperation.WRITE,
                         permission_type=kadmin.ACLPermissionType.ALLOW,
                         resource_pattern=kadmin.ResourcePattern(
                             kadmin.ResourceType.TOPIC, t, kadmin.ACLResourcePatternType.LITERAL))
        result = a.create_acls([acl])
        assert result["failed"] == [] and len(result["succeeded"]) == 1
        flt = kadmin.ACLFilter(principal=None, host=None, operation=kadmin.ACLOperation.ANY,
                               permission_type=kadmin.ACLPermissionType.ANY,
                               resource_pattern=kadmin.ResourcePatternFilter(
                                   kadmin.ResourceType.TOPIC, t,
                                   kadmin.ACLResourcePatternType.ANY))
        acls, error = a.describe_acls(flt)
        assert error.errno == 0
        assert [(x.principal, x.operation) for x in acls] == [
            ("User:bob", kadmin.ACLOperation.WRITE)]
        (got_filter, matching, err), = a.delete_acls([flt])
        assert [m.principal for m in matching] == ["User:bob"] and err.errno == 0
        assert a.describe_acls(flt)[0] == []
    finally:
        a.close()


def test_denied_without_the_cluster_acl(secured, tmp_path):
    """A broker whose ACLs let nobody manage ACLs answers CLUSTER_AUTHORIZATION_FAILED."""
    with BrokerProcess(tmp_path / "data", settings=AUTHZ) as b:
        a = AdminClient({"bootstrap.servers": b.bootstrap})
        try:
            with pytest.raises(ClusterAuthorizationFailedError, match="may not DESCRIBE"):
                a.describe_acls()
            with pytest.raises(ClusterAuthorizationFailedError, match="may not ALTER"):
                a.create_acls([acl_binding("topic", "t", "literal", "User:a", "*", "read",
                                           "allow")])
        finally:
            a.close()


def test_acls_survive_kill_9_and_a_changed_set_is_applied_on_restart(secured, tmp_path):
    data = tmp_path / "data"
    gregor("acls", "add", "--allow-principal", "User:ANONYMOUS", "--operation", "All",
           "--cluster", "--data-dir", str(data))
    b = BrokerProcess(data, settings=AUTHZ)
    b.start()
    try:
        with AdminClient({"bootstrap.servers": b.bootstrap}) as a:
            a.create_acls([acl_binding("group", "g1", "literal", "User:dora", "*", "read",
                                       "allow")])
        b.kill()
        gregor("acls", "add", "--deny-principal", "User:eve", "--operation", "Write",
               "--topic", "t1", "--data-dir", str(data))
        b.start()
        with AdminClient({"bootstrap.servers": b.bootstrap}) as a:
            got = {(x.pattern.resource_type, x.pattern.name, x.entry.principal,
                    x.entry.permission) for x in a.describe_acls()}
        assert (RT.GROUP, "g1", "User:dora", Perm.ALLOW) in got
        assert (RT.TOPIC, "t1", "User:eve", Perm.DENY) in got
        assert any(x[0] == RT.CLUSTER for x in got)
    finally:
        b.stop()


@pytest.mark.parametrize("settings,message", [
    (["authorizer.class.name=com.example.Mine"], "is not an authorizer gregor provides"),
    (["authorizer.class.name=kafka.security.authorizer.AclAuthorizer", "super.users=admin"],
     "super.users: principal 'admin' must look like 'User:<name>'"),
])
def test_the_broker_refuses_bad_authorizer_settings(tmp_path, settings, message):
    sets = [a for s in settings for a in ("--set", s)]
    proc = gregor("broker", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path), *sets,
                  check=False)
    assert proc.returncode != 0 and message in proc.stderr
