"""CreateAcls / DescribeAcls / DeleteAcls handlers in process, every version (as Kafka's
SaslSslAdminIntegrationTest: filters, invalid ACLs, legacy v0 never touching PREFIXED ACLs,
ALTER / DESCRIBE on the cluster required, SECURITY_DISABLED without an authorizer)."""
from __future__ import annotations

from gregor.protocol.acl import (AclOperation as Op, AclPermissionType as Perm,
                                 PatternType as PT, ResourceType as RT)
from gregor.broker.security.principal import ANONYMOUS, KafkaPrincipal
from gregor.protocol.errors import ErrorCode as E
from tests.broker.handler_harness import As, call, run_broker

AUTHZ = {"authorizer_class_name": "kafka.security.authorizer.AclAuthorizer",
         "super_users": "User:admin"}
ADMIN = As(KafkaPrincipal("User", "admin"))
ANON = As(ANONYMOUS)


def creation(rt, name, pt, principal="User:alice", host="*", op=Op.READ, perm=Perm.ALLOW):
    return {"resource_type": int(rt), "resource_name": name, "resource_pattern_type": int(pt),
            "principal": principal, "host": host, "operation": int(op),
            "permission_type": int(perm)}


def flt(rt=RT.ANY, name=None, pt=PT.ANY, principal=None, host=None, op=Op.ANY, perm=Perm.ANY):
    return {"resource_type_filter": int(rt), "resource_name_filter": name,
            "pattern_type_filter": int(pt), "principal_filter": principal,
            "host_filter": host, "operation": int(op), "permission_type": int(perm)}


async def create(b, version, creations, who=ADMIN):
    return await call(b, "CreateAcls", version, {"creations": creations}, who)


async def describe(b, version, who=ADMIN, **kw):
    return await call(b, "DescribeAcls", version, flt(**kw), who)


async def delete(b, version, filters, who=ADMIN):
    return await call(b, "DeleteAcls", version, {"filters": filters}, who)


def names(resp):
    return sorted((r["resource_name"], r.get("pattern_type", 3), len(r["acls"]))
                  for r in resp["resources"])


def test_without_an_authorizer_every_acl_api_answers_security_disabled(tmp_path):
    async def scenario(b):
        r = await describe(b, 1)
        assert (r["error_code"], r["error_message"]) == (
            E.SECURITY_DISABLED, "No Authorizer is configured on the broker (set "
            "authorizer.class.name to kafka.security.authorizer.AclAuthorizer)")
        r = await create(b, 1, [creation(RT.TOPIC, "t", PT.LITERAL)] * 2)
        assert [x["error_code"] for x in r["results"]] == [E.SECURITY_DISABLED] * 2
        r = await delete(b, 1, [flt()])
        assert r["filter_results"][0]["error_code"] == E.SECURITY_DISABLED
    run_broker(tmp_path, scenario)


def test_create_describe_delete_every_version(tmp_path):
    async def scenario(b):
        r = await create(b, 2, [creation(RT.TOPIC, "mytopic", PT.LITERAL),
                                creation(RT.TOPIC, "*", PT.LITERAL, op=Op.WRITE),
                                creation(RT.TOPIC, "my", PT.PREFIXED),
                                creation(RT.GROUP, "g", PT.LITERAL, op=Op.READ),
                                creation(RT.CLUSTER, "kafka-cluster", PT.LITERAL, op=Op.ALTER)])
        assert [x["error_code"] for x in r["results"]] == [E.NONE] * 5
        r = await create(b, 0, [creation(RT.TRANSACTIONAL_ID, "tx", PT.LITERAL, op=Op.WRITE)])
        assert r["results"][0]["error_code"] == E.NONE
        r = await create(b, 3, [creation(RT.USER, "User:bob", PT.LITERAL,
                                         op=Op.DESCRIBE_TOKENS)])
        assert r["results"][0]["error_code"] == E.NONE

        all_topics = dict(rt=RT.TOPIC, pt=PT.ANY)
        assert names(await describe(b, 3, **all_topics)) == [
            ("*", 3, 1), ("my", 4, 1), ("mytopic", 3, 1)]
        # v0 has no pattern type: its filter is LITERAL; PREFIXED ACLs are never returned
        assert names(await describe(b, 0, rt=RT.TOPIC, pt=PT.LITERAL)) == [
            ("*", 3, 1), ("mytopic", 3, 1)]
        assert names(await describe(b, 1, rt=RT.TOPIC, name="mytopic", pt=PT.MATCH)) == [
            ("*", 3, 1), ("my", 4, 1), ("mytopic", 3, 1)]
        r = await describe(b, 1, principal="User:alice", op=Op.ALTER)
        assert [(x["resource_type"], x["acls"][0]["operation"]) for x in r["resources"]] == [
            (RT.CLUSTER, Op.ALTER)]

        # v0 delete of every topic ACL leaves the PREFIXED one alone
        r = await delete(b, 0, [flt(rt=RT.TOPIC, pt=PT.LITERAL)])
        removed = r["filter_results"][0]["matching_acls"]
        assert sorted(m["resource_name"] for m in removed) == ["*", "mytopic"]
        assert all(m["error_code"] == E.NONE for m in removed)
        assert names(await describe(b, 1, **all_topics)) == [("my", 4, 1)]
        r = await delete(b, 2, [flt(rt=RT.TOPIC, name="my", pt=PT.PREFIXED),
                                flt(rt=RT.GROUP, name="nothing", pt=PT.ANY)])
        assert [len(f["matching_acls"]) for f in r["filter_results"]] == [1, 0]
        assert r["filter_results"][0]["matching_acls"][0]["pattern_type"] == PT.PREFIXED
        assert names(await describe(b, 1, **all_topics)) == []
    run_broker(tmp_path, scenario, **AUTHZ)


def test_invalid_acls_are_refused_one_by_one(tmp_path):
    """testAttemptToCreateInvalidAcls, plus the other bindings Kafka refuses."""
    async def scenario(b):
        r = await create(b, 1, [
            creation(RT.CLUSTER, "foobar", PT.LITERAL),
            creation(RT.TOPIC, "", PT.LITERAL),
            creation(RT.TOPIC, "ok", PT.LITERAL),
            creation(RT.TOPIC, "a/b", PT.LITERAL),
            creation(RT.TOPIC, "t", PT.MATCH),
            creation(RT.ANY, "t", PT.LITERAL),
            creation(RT.TOPIC, "t", PT.LITERAL, principal="alice"),
            {**creation(RT.TOPIC, "t", PT.LITERAL), "operation": 99},
        ])
        codes = [x["error_code"] for x in r["results"]]
        assert codes == [E.INVALID_REQUEST, E.INVALID_REQUEST, E.NONE] + [E.INVALID_REQUEST] * 5
        msgs = [x["error_message"] for x in r["results"]]
        assert msgs[0] == "The only valid name for the CLUSTER resource is kafka-cluster"
        assert msgs[1] == "Invalid empty resource name"
        assert "User:<name>" in msgs[6]
        r = await describe(b, 1, op=Op.UNKNOWN)
        assert r["error_code"] == E.INVALID_REQUEST and "UNKNOWN" in r["error_message"]
        r = await delete(b, 1, [flt(), flt(perm=Perm.UNKNOWN)])
        assert [f["error_code"] for f in r["filter_results"]] == [E.NONE, E.INVALID_REQUEST]
        assert len(r["filter_results"][0]["matching_acls"]) == 1   # "ok" was deleted
    run_broker(tmp_path, scenario, **AUTHZ)


def test_acl_apis_need_alter_or_describe_on_the_cluster(tmp_path):
    """testAclAuthorizationDenied: ALTER manages ACLs (and implies DESCRIBE); DENY wins."""
    cluster = dict(rt=RT.CLUSTER, name="kafka-cluster", pt=PT.LITERAL)

    def cluster_acl(op, perm, principal="User:ANONYMOUS"):
        return creation(RT.CLUSTER, "kafka-cluster", PT.LITERAL, principal=principal, op=op,
                        perm=perm)

    async def can(b):
        d = await describe(b, 1, ANON)
        c = await create(b, 1, [creation(RT.TOPIC, "x", PT.LITERAL)], ANON)
        x = await delete(b, 1, [flt(rt=RT.TOPIC, name="x", pt=PT.LITERAL)], ANON)
        return (d["error_code"] == E.NONE, c["results"][0]["error_code"] == E.NONE,
                x["filter_results"][0]["error_code"] == E.NONE)

    async def scenario(b):
        r = await describe(b, 2, ANON)
        assert r["error_code"] == E.CLUSTER_AUTHORIZATION_FAILED
        assert "User:ANONYMOUS may not DESCRIBE the cluster" in r["error_message"]
        assert await can(b) == (False, False, False)
        await create(b, 1, [cluster_acl(Op.ALTER, Perm.ALLOW)])
        assert await can(b) == (True, True, True)
        await create(b, 1, [cluster_acl(Op.ALTER, Perm.DENY)])
        assert await can(b) == (True, False, False)
        await create(b, 1, [cluster_acl(Op.DESCRIBE, Perm.DENY)])
        assert await can(b) == (False, False, False)
        await delete(b, 1, [flt(**cluster, perm=Perm.DENY)])
        assert await can(b) == (True, True, True)
        await delete(b, 1, [flt(**cluster)])
        await create(b, 1, [cluster_acl(Op.DESCRIBE, Perm.ALLOW)])
        assert await can(b) == (True, False, False)
    run_broker(tmp_path, scenario, **AUTHZ)


# -- any request: no crash, an answer that encodes, memory and disk agreeing -------------------

def test_random_acl_requests_never_break_the_broker(tmp_path):
    import asyncio

    from hypothesis import HealthCheck, given, settings, strategies as st

    from gregor.broker.security.acl_store import FileAclStore
    from tests.broker.handler_harness import Broker, BrokerConfig, apis

    loop = asyncio.new_event_loop()
    b = Broker(BrokerConfig({"log.dirs": str(tmp_path), **{
        k.replace("_", "."): v for k, v in AUTHZ.items()}}))
    b.open()
    b.handlers = apis.build_handlers(b)
    code = st.integers(-1, 8)
    name = st.sampled_from(["t", "*", "", "a/b", "kafka-cluster", "pre", "p", None])
    principal = st.sampled_from(["User:alice", "User:*", "alice", "Group:x", "", None])
    host = st.sampled_from(["*", "10.0.0.1", "", None])
    fields = st.fixed_dictionaries({
        "resource_type": code, "resource_name": name, "resource_pattern_type": code,
        "principal": principal, "host": host, "operation": st.integers(-1, 15),
        "permission_type": code})

    def creation(d):
        return {k: ("" if v is None else v) for k, v in d.items()}

    def as_filter(d):
        return {"resource_type_filter": d["resource_type"],
                "resource_name_filter": d["resource_name"],
                "pattern_type_filter": d["resource_pattern_type"],
                "principal_filter": d["principal"], "host_filter": d["host"],
                "operation": d["operation"], "permission_type": d["permission_type"]}

    @settings(max_examples=150, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(st.tuples(st.sampled_from(["create", "describe", "delete"]),
                              st.integers(0, 3), st.lists(fields, max_size=4),
                              st.booleans()), max_size=6))
    def run(ops):
        for op, version, items, admin in ops:
            who = ADMIN if admin else ANON
            if op == "create":
                coro = create(b, version, [creation(d) for d in items], who)
            elif op == "delete":
                coro = delete(b, version, [as_filter(d) for d in items], who)
            else:
                coro = describe(b, version, who, **{
                    k: v for k, v in zip(("rt", "name", "pt", "principal", "host", "op",
                                          "perm"), as_filter(items[0]).values())}) \
                    if items else describe(b, version, who)
            loop.run_until_complete(coro)       # the harness checks the answer encodes
        assert FileAclStore(tmp_path).load_now() == {
            p: b.authorizer.entries(p) for p in b.authorizer.patterns}

    try:
        run()
    finally:
        loop.run_until_complete(b.shutdown())
        loop.close()
