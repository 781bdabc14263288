"""IncrementalAlterConfigs under the ACL authorizer: ALTER_CONFIGS on the topic, the group, the
cluster (brokers and broker loggers), as Kafka checks it; a denial changes nothing."""
from gregor.broker.group_configs import group_config
from gregor.protocol.acl import AclOperation as Op, ResourceType as RT
from gregor.protocol.errors import ErrorCode as E
from tests.broker.handler_harness import call, create, run_broker
from tests.broker.security.test_authorization_rules import AUTHZ, CLIENT, grant


def body(*resources):
    return {"resources": [{"resource_type": t, "resource_name": n, "configs": [
        {"name": k, "config_operation": 0, "value": v}]} for t, n, k, v in resources],
        "validate_only": False}


RESOURCES = ((2, "t", "retention.ms", "5000"),
             (32, "g", "share.auto.offset.reset", "earliest"),
             (8, "0", "gregor.broker", "INFO"))


def test_alter_configs_is_needed_on_each_resource(tmp_path):
    async def scenario(b):
        await create(b, "t")
        r = await call(b, "IncrementalAlterConfigs", 1, body(*RESOURCES), CLIENT)
        assert [x["error_code"] for x in r["responses"]] == [
            E.TOPIC_AUTHORIZATION_FAILED, E.GROUP_AUTHORIZATION_FAILED,
            E.CLUSTER_AUTHORIZATION_FAILED]
        assert "retention.ms" not in b.store.get("t").configs
        assert group_config(b, "g")["share.auto.offset.reset"] == "latest"
        grant(b, RT.TOPIC, "t", Op.ALTER_CONFIGS)
        grant(b, RT.GROUP, "g", Op.ALTER_CONFIGS)
        grant(b, RT.CLUSTER, "kafka-cluster", Op.ALTER_CONFIGS)
        r = await call(b, "IncrementalAlterConfigs", 1, body(*RESOURCES), CLIENT)
        assert [x["error_code"] for x in r["responses"]] == [E.NONE, E.NONE, E.NONE]
        assert b.store.get("t").configs["retention.ms"] == "5000"
        assert group_config(b, "g")["share.auto.offset.reset"] == "earliest"
    run_broker(tmp_path, scenario, **AUTHZ)
