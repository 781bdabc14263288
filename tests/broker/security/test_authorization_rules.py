"""The authorization rules beyond one error per API (Kafka's AuthorizerIntegrationTest):
Metadata never discloses existence and filters all-topics answers, auto-creation needs
CREATE, KIP-430 authorized operations, the listing APIs filter, host and prefix ACLs, and a
denial is logged naming principal, operation, resource and host."""
from __future__ import annotations

import logging

from gregor.protocol.acl import (AccessControlEntry, AclOperation as Op,
                                 AclPermissionType as Perm, PatternType,
                                 ResourcePattern, ResourceType as RT, SUPPORTED_OPERATIONS)
from gregor.broker.security.principal import KafkaPrincipal
from gregor.protocol.errors import ErrorCode as E
from tests.broker.handler_harness import As, batch, call, create, produce_body, run_broker

CLIENT = As(KafkaPrincipal("User", "client"), "10.0.0.9")
AUTHZ = {"authorizer_class_name": "kafka.security.authorizer.AclAuthorizer",
         "group_initial_rebalance_delay_ms": 0, "offsets_topic_num_partitions": 1,
         "transaction_state_log_num_partitions": 1}
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED


def grant(b, rtype, name, *ops, pattern=LIT, host="*", perm=Perm.ALLOW,
          principal="User:client"):
    p = ResourcePattern(rtype, name, pattern)
    b.authorizer.set_entries(p, b.authorizer.entries(p) | {
        AccessControlEntry(principal, host, op, perm) for op in ops})


def bits(*ops) -> int:
    return sum(1 << int(op) for op in ops)


def test_metadata_hides_what_may_not_be_described(tmp_path):
    async def scenario(b):
        for t in ("visible", "hidden"):
            await create(b, t)
        grant(b, RT.TOPIC, "visible", Op.DESCRIBE)
        for version, body in ((1, {"topics": None}), (0, {"topics": []}),
                              (12, {"topics": None})):
            r = await call(b, "Metadata", version, body, CLIENT)
            assert [t["name"] for t in r["topics"]] == ["visible"], version
        r = await call(b, "Metadata", 9, {"topics": [{"name": "hidden"}, {"name": "nowhere"},
                                                     {"name": "visible"}],
                                          "allow_auto_topic_creation": False}, CLIENT)
        got = [(t["name"], t["error_code"], t["topic_id"], len(t["partitions"]))
               for t in r["topics"]]
        assert got[:2] == [("hidden", E.TOPIC_AUTHORIZATION_FAILED, bytes(16), 0),
                           ("nowhere", E.TOPIC_AUTHORIZATION_FAILED, bytes(16), 0)]
        assert got[2][:2] == ("visible", E.NONE) and got[2][3] == 1
        # asked by id (v12): the id is kept, the name is not disclosed
        hidden_id = b.store.get("hidden").topic_id_bytes
        r = await call(b, "Metadata", 12, {"topics": [{"topic_id": hidden_id, "name": None}],
                                           "allow_auto_topic_creation": False}, CLIENT)
        (t,) = r["topics"]
        assert (t["name"], t["topic_id"], t["error_code"]) == (
            None, hidden_id, E.TOPIC_AUTHORIZATION_FAILED)
    run_broker(tmp_path, scenario, **AUTHZ)


def test_auto_creation_needs_create_on_the_cluster_or_the_topic(tmp_path):
    async def scenario(b):
        grant(b, RT.TOPIC, "*", Op.DESCRIBE)

        async def ask(name):
            r = await call(b, "Metadata", 9, {"topics": [{"name": name}],
                                              "allow_auto_topic_creation": True}, CLIENT)
            return r["topics"][0]["error_code"]
        assert await ask("a1") == E.TOPIC_AUTHORIZATION_FAILED and b.store.get("a1") is None
        grant(b, RT.TOPIC, "a", Op.CREATE, pattern=PRE)
        assert await ask("a1") == E.NONE and b.store.get("a1") is not None
        assert await ask("b1") == E.TOPIC_AUTHORIZATION_FAILED
        grant(b, RT.CLUSTER, "kafka-cluster", Op.CREATE)
        assert await ask("b1") == E.NONE and b.store.get("b1") is not None
        # Produce creates too, with the same permission (single node)
        grant(b, RT.TOPIC, "*", Op.WRITE)
        b.authorizer.set_entries(ResourcePattern(RT.CLUSTER, "kafka-cluster", LIT), ())
        r = await call(b, "Produce", 8, produce_body("c1", batch(b"v")), CLIENT)
        assert r["responses"][0]["partition_responses"][0]["error_code"] == \
            E.UNKNOWN_TOPIC_OR_PARTITION and b.store.get("c1") is None
        r = await call(b, "Produce", 8, produce_body("a2", batch(b"v")), CLIENT)
        assert r["responses"][0]["partition_responses"][0]["error_code"] == E.NONE
    run_broker(tmp_path, scenario, **AUTHZ)


def test_kip430_authorized_operations(tmp_path):
    async def scenario(b):
        await create(b, "t")
        r = await call(b, "Metadata", 10, {"topics": [{"name": "t"}],
                                           "include_cluster_authorized_operations": True,
                                           "include_topic_authorized_operations": True}, CLIENT)
        assert r["topics"][0]["error_code"] == E.TOPIC_AUTHORIZATION_FAILED
        assert r["topics"][0]["topic_authorized_operations"] == -2147483648
        assert r["cluster_authorized_operations"] == 0      # no DESCRIBE on the cluster
        grant(b, RT.TOPIC, "t", Op.READ, Op.ALTER_CONFIGS)
        grant(b, RT.CLUSTER, "kafka-cluster", Op.DESCRIBE, Op.IDEMPOTENT_WRITE)
        r = await call(b, "Metadata", 10, {"topics": [{"name": "t"}],
                                           "include_cluster_authorized_operations": True,
                                           "include_topic_authorized_operations": True}, CLIENT)
        assert r["topics"][0]["topic_authorized_operations"] == bits(
            Op.READ, Op.DESCRIBE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS)
        assert r["cluster_authorized_operations"] == bits(Op.DESCRIBE, Op.IDEMPOTENT_WRITE)
        r = await call(b, "DescribeCluster", 0, {"include_cluster_authorized_operations": True},
                       CLIENT)
        assert r["cluster_authorized_operations"] == bits(Op.DESCRIBE, Op.IDEMPOTENT_WRITE)
        r = await call(b, "DescribeCluster", 0, {"include_cluster_authorized_operations": False},
                       CLIENT)
        assert r["cluster_authorized_operations"] == -2147483648
        grant(b, RT.GROUP, "g", Op.READ)
        r = await call(b, "DescribeGroups", 5, {"groups": ["g"],
                                                "include_authorized_operations": True}, CLIENT)
        assert r["groups"][0]["authorized_operations"] == bits(Op.READ, Op.DESCRIBE)
    run_broker(tmp_path, scenario, **AUTHZ)


def test_kip430_without_an_authorizer_lists_every_supported_operation(tmp_path):
    async def scenario(b):
        await create(b, "t")
        r = await call(b, "Metadata", 10, {"topics": [{"name": "t"}],
                                           "include_cluster_authorized_operations": True,
                                           "include_topic_authorized_operations": True}, CLIENT)
        assert r["topics"][0]["topic_authorized_operations"] == bits(
            *SUPPORTED_OPERATIONS[RT.TOPIC])
        assert r["cluster_authorized_operations"] == bits(*SUPPORTED_OPERATIONS[RT.CLUSTER])
    run_broker(tmp_path, scenario)


def test_listings_are_filtered_never_refused(tmp_path):
    async def scenario(b):
        await create(b, "t")
        for g in ("g1", "g2"):          # groups with offsets, committed by the broker itself
            await call(b, "OffsetCommit", 2, {
                "group_id": g, "generation_id_or_member_epoch": -1, "member_id": "",
                "retention_time_ms": -1, "topics": [{"name": "t", "partitions": [
                    {"partition_index": 0, "committed_offset": 3, "committed_metadata": ""}]}]})
        r = await call(b, "ListGroups", 4, {"states_filter": []}, CLIENT)
        assert (r["error_code"], r["groups"]) == (E.NONE, [])
        grant(b, RT.GROUP, "g2", Op.DESCRIBE)
        r = await call(b, "ListGroups", 4, {"states_filter": []}, CLIENT)
        assert [g["group_id"] for g in r["groups"]] == ["g2"]
        grant(b, RT.CLUSTER, "kafka-cluster", Op.DESCRIBE)
        r = await call(b, "ListGroups", 4, {"states_filter": []}, CLIENT)
        assert sorted(g["group_id"] for g in r["groups"]) == ["g1", "g2"]
        # OffsetFetch of all partitions leaves out the topics it may not DESCRIBE
        r = await call(b, "OffsetFetch", 8, {"groups": [{"group_id": "g2", "topics": None}]},
                       CLIENT)
        assert r["groups"][0]["error_code"] == E.NONE and r["groups"][0]["topics"] == []
        grant(b, RT.TOPIC, "t", Op.DESCRIBE)
        r = await call(b, "OffsetFetch", 8, {"groups": [{"group_id": "g2", "topics": None}]},
                       CLIENT)
        assert [t["name"] for t in r["groups"][0]["topics"]] == ["t"]
        # transactions: ListTransactions lists only the ids it may DESCRIBE
        r = await call(b, "InitProducerId", 4, {"transactional_id": "tx",
                                                "transaction_timeout_ms": 60000})
        assert r["error_code"] == E.NONE
        r = await call(b, "ListTransactions", 1, {"state_filters": [],
                                                  "producer_id_filters": []}, CLIENT)
        assert (r["error_code"], r["transaction_states"]) == (E.NONE, [])
        grant(b, RT.TRANSACTIONAL_ID, "tx", Op.DESCRIBE)
        r = await call(b, "ListTransactions", 1, {"state_filters": [],
                                                  "producer_id_filters": []}, CLIENT)
        assert [s["transactional_id"] for s in r["transaction_states"]] == ["tx"]
    run_broker(tmp_path, scenario, **AUTHZ)


def test_host_and_prefix_acls_at_the_api(tmp_path):
    """testHostAddressBasedAcls / testPrefixAcls: the client's address and the topic's prefix
    select the ACLs; a DENY from one host closes that host only."""
    async def scenario(b):
        await create(b, "logs-a")
        await create(b, "other")
        grant(b, RT.TOPIC, "logs-", Op.WRITE, pattern=PRE, host="10.0.0.9")
        grant(b, RT.TOPIC, "logs-", Op.WRITE, pattern=PRE, host="10.0.0.7", perm=Perm.DENY)

        async def produce(topic, host):
            r = await call(b, "Produce", 8, produce_body(topic, batch(b"v")),
                           As(KafkaPrincipal("User", "client"), host))
            return r["responses"][0]["partition_responses"][0]["error_code"]
        assert await produce("logs-a", "10.0.0.9") == E.NONE
        assert await produce("logs-a", "10.0.0.8") == E.TOPIC_AUTHORIZATION_FAILED
        assert await produce("other", "10.0.0.9") == E.TOPIC_AUTHORIZATION_FAILED
        grant(b, RT.TOPIC, "*", Op.WRITE, host="*")
        assert await produce("other", "10.0.0.7") == E.NONE
        assert await produce("logs-a", "10.0.0.7") == E.TOPIC_AUTHORIZATION_FAILED
    run_broker(tmp_path, scenario, **AUTHZ)


def test_describe_configs_is_implied_by_alter_configs(tmp_path):
    async def scenario(b):
        await create(b, "t")
        body = {"resources": [{"resource_type": 2, "resource_name": "t",
                               "configuration_keys": ["retention.ms"]}]}
        r = await call(b, "DescribeConfigs", 3, body, CLIENT)
        assert r["results"][0]["error_code"] == E.TOPIC_AUTHORIZATION_FAILED
        assert r["results"][0]["configs"] == []
        grant(b, RT.TOPIC, "t", Op.ALTER_CONFIGS)
        r = await call(b, "DescribeConfigs", 3, body, CLIENT)
        assert r["results"][0]["error_code"] == E.NONE and r["results"][0]["configs"]
    run_broker(tmp_path, scenario, **AUTHZ)


def test_consumer_group_describe_hides_groups_naming_undescribable_topics(tmp_path):
    async def scenario(b):
        await create(b, "t")
        r = await call(b, "ConsumerGroupHeartbeat", 0, {
            "group_id": "cg", "member_id": "", "member_epoch": 0,
            "rebalance_timeout_ms": 1000, "subscribed_topic_names": ["t"],
            "topic_partitions": []})
        assert r["error_code"] == E.NONE
        grant(b, RT.GROUP, "cg", Op.DESCRIBE)
        r = await call(b, "ConsumerGroupDescribe", 0, {"group_ids": ["cg"],
                                                       "include_authorized_operations": True},
                       CLIENT)
        g = r["groups"][0]
        assert (g["error_code"], g["members"]) == (E.TOPIC_AUTHORIZATION_FAILED, [])
        grant(b, RT.TOPIC, "t", Op.DESCRIBE)
        r = await call(b, "ConsumerGroupDescribe", 0, {"group_ids": ["cg"],
                                                       "include_authorized_operations": True},
                       CLIENT)
        g = r["groups"][0]
        assert g["error_code"] == E.NONE and len(g["members"]) == 1
        assert g["authorized_operations"] == bits(Op.DESCRIBE)
    run_broker(tmp_path, scenario, **AUTHZ)


def test_deletion_disabled_answers_before_authorization(tmp_path):
    async def scenario(b):
        await create(b, "t")
        r = await call(b, "DeleteTopics", 3, {"topic_names": ["t"], "timeout_ms": 1000},
                       CLIENT)
        assert r["responses"][0]["error_code"] == E.TOPIC_DELETION_DISABLED
    run_broker(tmp_path, scenario, delete_topic_enable=False, **AUTHZ)


def test_each_denial_is_logged_naming_what_was_missing(tmp_path, caplog):
    async def scenario(b):
        await create(b, "t")
        with caplog.at_level(logging.INFO, logger="gregor.authorizer"):
            await call(b, "Produce", 8, produce_body("t", batch(b"v")), CLIENT)
            await call(b, "Metadata", 1, {"topics": None}, CLIENT)    # filtering: silent
    run_broker(tmp_path, scenario, **AUTHZ)
    lines = [r.getMessage() for r in caplog.records if r.name == "gregor.authorizer"]
    assert lines == ["Principal = User:client is Denied operation = Write from host = "
                     "10.0.0.9 on resource = Topic:LITERAL:t for request = Produce"]


def test_a_revoked_acl_applies_to_the_next_request_of_a_connection_allowed_before(tmp_path):
    """A connection memoises its allowed decisions (security/checks.py); an ACL change must
    reach it at once."""
    async def scenario(b):
        await create(b, "t")
        conn = As(KafkaPrincipal("User", "client"), "10.0.0.9")     # one connection
        grant(b, RT.TOPIC, "t", Op.WRITE)
        for _ in range(2):                                         # the second from the memo
            resp = await call(b, "Produce", 8, produce_body("t", batch(b"v")), who=conn)
            assert resp["responses"][0]["partition_responses"][0]["error_code"] == E.NONE
        b.authorizer.set_entries(ResourcePattern(RT.TOPIC, "t", LIT), frozenset())
        resp = await call(b, "Produce", 8, produce_body("t", batch(b"v")), who=conn)
        assert resp["responses"][0]["partition_responses"][0]["error_code"] == \
            E.TOPIC_AUTHORIZATION_FAILED
        grant(b, RT.TOPIC, "t", Op.WRITE)
        resp = await call(b, "Produce", 8, produce_body("t", batch(b"v")), who=conn)
        assert resp["responses"][0]["partition_responses"][0]["error_code"] == E.NONE
    run_broker(tmp_path, scenario, **AUTHZ)
