"""IncrementalAlterConfigs (44) on an in-process broker: topics, groups, brokers, loggers."""
import logging

from gregor.broker.group_configs import group_config
from gregor.protocol.errors import ErrorCode

from .handler_harness import call, create, run_broker

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
TOPIC, BROKER, LOGGER, GROUP = 2, 4, 8, 32


def iac(*resources, validate_only=False):
    return {"resources": [{"resource_type": t, "resource_name": n, "configs": [
        {"name": k, "config_operation": op, "value": v} for k, op, v in ops]}
        for t, n, ops in resources], "validate_only": validate_only}


async def codes(b, *resources, validate_only=False):
    r = await call(b, "IncrementalAlterConfigs", 1, iac(*resources, validate_only=validate_only))
    return [(x["error_code"], x["error_message"]) for x in r["responses"]]


async def described(b, rtype, name, keys=None):
    r = await call(b, "DescribeConfigs", 3, {"resources": [
        {"resource_type": rtype, "resource_name": name, "configuration_keys": keys}],
        "include_synonyms": True, "include_documentation": False})
    res = r["results"][0]
    assert res["error_code"] == 0, res
    return {c["name"]: (c["value"], c["config_source"]) for c in res["configs"]}


def test_topic_set_delete_keep_the_other_configs(tmp_path):
    async def s(b):
        await create(b, "t", configs={"retention.ms": "1000"})
        assert await codes(b, (TOPIC, "t", [("segment.bytes", SET, "1048576")])) == [(0, None)]
        d = await described(b, TOPIC, "t")
        # incremental: retention.ms (set at creation) stays, unlike AlterConfigs
        assert d["retention.ms"] == ("1000", 1) and d["segment.bytes"] == ("1048576", 1)
        assert await codes(b, (TOPIC, "t", [("retention.ms", DELETE, None)])) == [(0, None)]
        d = await described(b, TOPIC, "t")
        assert d["retention.ms"][1] == 5 and d["segment.bytes"] == ("1048576", 1)
        p = b.replica_manager.get("t", 0)
        assert int(p.config["segment.bytes"]) == 1048576      # applied to the partition
    run_broker(tmp_path, s)


def test_topic_list_operations_and_their_errors(tmp_path):
    async def s(b):
        await create(b, "t")
        assert await codes(b, (TOPIC, "t", [("cleanup.policy", APPEND, "compact")])) == \
            [(0, None)]
        assert (await described(b, TOPIC, "t"))["cleanup.policy"][0] == "delete,compact"
        assert await codes(b, (TOPIC, "t", [("cleanup.policy", SUBTRACT, "delete")])) == \
            [(0, None)]
        assert (await described(b, TOPIC, "t"))["cleanup.policy"][0] == "compact"
        [(code, msg)] = await codes(b, (TOPIC, "t", [("retention.ms", APPEND, "5")]))
        assert code == ErrorCode.INVALID_REQUEST and "append" in msg
        [(code, msg)] = await codes(b, (TOPIC, "t", [("no.such.config", SET, "5")]))
        assert code == ErrorCode.INVALID_CONFIG
        [(code, _)] = await codes(b, (TOPIC, "t", [("retention.ms", SET, "soon")]))
        assert code == ErrorCode.INVALID_CONFIG
        [(code, _)] = await codes(b, (TOPIC, "nope", [("retention.ms", SET, "5")]))
        assert code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        [(code, msg)] = await codes(b, (TOPIC, "t", [("retention.ms", SET, None)]))
        assert code == ErrorCode.INVALID_REQUEST and "Null value" in msg
        [(code, msg)] = await codes(b, (TOPIC, "t", [("retention.ms", SET, "1"),
                                                     ("retention.ms", DELETE, None)]))
        assert code == ErrorCode.INVALID_REQUEST and "duplicate" in msg
        # the same resource twice: both refused; the others answered on their own
        got = await codes(b, (TOPIC, "t", [("retention.ms", SET, "7")]),
                          (TOPIC, "t", [("segment.ms", SET, "7")]),
                          (TOPIC, "nope", []))
        assert [c for c, _ in got] == [ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST,
                                       ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
        assert (await described(b, TOPIC, "t"))["cleanup.policy"][0] == "compact"
    run_broker(tmp_path, s)


def test_validate_only_changes_nothing(tmp_path):
    async def s(b):
        await create(b, "t")
        assert await codes(b, (TOPIC, "t", [("retention.ms", SET, "1234")]),
                           (GROUP, "g", [("share.auto.offset.reset", SET, "earliest")]),
                           validate_only=True) == [(0, None), (0, None)]
        assert (await described(b, TOPIC, "t"))["retention.ms"][1] == 5
        assert group_config(b, "g")["share.auto.offset.reset"] == "latest"
    run_broker(tmp_path, s)


def test_group_configs_with_the_broker_bounds(tmp_path):
    async def s(b):
        ok = await codes(b, (GROUP, "g", [("share.auto.offset.reset", SET, "by_duration:PT1H"),
                                          ("share.record.lock.duration.ms", SET, "20000"),
                                          ("share.isolation.level", SET, "read_committed")]))
        assert ok == [(0, None)]
        cfg = group_config(b, "g")
        assert cfg["share.auto.offset.reset"] == "by_duration:PT1H"
        assert cfg["share.record.lock.duration.ms"] == 20000
        assert cfg["share.session.timeout.ms"] == 45000           # the broker's default
        assert cfg["consumer.heartbeat.interval.ms"] == 5000
        d = await described(b, GROUP, "g")
        assert d["share.record.lock.duration.ms"] == ("20000", 8)   # GROUP_CONFIG
        assert d["share.session.timeout.ms"] == ("45000", 5)
        for op, err in [
                (("share.record.lock.duration.ms", SET, "1000"), "greater than or equal"),
                (("share.record.lock.duration.ms", SET, "999999"), "less than or equal"),
                (("consumer.session.timeout.ms", SET, "x"), "Not a number"),
                (("share.auto.offset.reset", SET, "by_duration:yesterday"), "ISO-8601"),
                (("share.auto.offset.reset", SET, "by_duration:-PT1H"), "negative"),
                (("share.isolation.level", SET, "dirty"), "read_committed"),
                (("share.heartbeat.interval.ms", SET, "15000"), None),   # within bounds, ok
                (("group.unknown", SET, "1"), "Unknown group config")]:
            [(code, msg)] = await codes(b, (GROUP, "g", [op]))
            if err is None:
                assert code == 0, msg
            else:
                assert code == ErrorCode.INVALID_CONFIG and err in msg, (op, msg)
        # heartbeat must stay below the session timeout
        [(code, msg)] = await codes(b, (GROUP, "h", [("share.session.timeout.ms", SET, "45000"),
                                                     ("share.heartbeat.interval.ms", SET,
                                                      "15000")]))
        assert code == 0
        [(code, msg)] = await codes(b, (GROUP, "g2", [("consumer.session.timeout.ms", SET,
                                                       "45000"),
                                                      ("consumer.heartbeat.interval.ms", SET,
                                                       "15000")]))
        assert code == 0
        [(code, msg)] = await codes(b, (GROUP, "g", [("share.auto.offset.reset", APPEND, "x")]))
        assert code == ErrorCode.INVALID_REQUEST
        assert (await codes(b, (GROUP, "", [])))[0][0] == ErrorCode.INVALID_REQUEST
        assert await codes(b, (GROUP, "g", [("share.auto.offset.reset", DELETE, None)])) == \
            [(0, None)]
        assert group_config(b, "g")["share.auto.offset.reset"] == "latest"
        assert group_config(b, "g")["share.record.lock.duration.ms"] == 20000
    run_broker(tmp_path, s, **{"group.share.max.heartbeat.interval.ms": 15000})


def test_group_configs_survive_a_restart(tmp_path):
    async def first(b):
        assert await codes(b, (GROUP, "g", [("share.auto.offset.reset", SET, "earliest")])) \
            == [(0, None)]

    async def second(b):
        assert group_config(b, "g")["share.auto.offset.reset"] == "earliest"
        assert (await described(b, GROUP, "g"))["share.auto.offset.reset"] == ("earliest", 8)
    run_broker(tmp_path, first)
    run_broker(tmp_path, second)


def test_heartbeat_not_below_session_timeout(tmp_path):
    async def s(b):
        [(code, msg)] = await codes(b, (GROUP, "g", [("share.heartbeat.interval.ms", SET,
                                                      "15000"),
                                                     ("share.session.timeout.ms", SET,
                                                      "15000")]))
        assert code == ErrorCode.INVALID_CONFIG
    run_broker(tmp_path, s, **{"group.share.min.session.timeout.ms": 10000})


def test_broker_settings_are_static_and_loggers_are_not(tmp_path):
    async def s(b):
        [(code, msg)] = await codes(b, (BROKER, "0", [("log.retention.ms", SET, "5")]))
        assert code == ErrorCode.INVALID_REQUEST and "dynamically" in msg
        [(code, _)] = await codes(b, (BROKER, "7", [("log.retention.ms", SET, "5")]))
        assert code == ErrorCode.INVALID_REQUEST
        assert await codes(b, (BROKER, "0", [])) == [(0, None)]
        name = "gregor.broker.fetch"
        logging.getLogger(name)
        assert await codes(b, (LOGGER, "0", [(name, SET, "DEBUG")])) == [(0, None)]
        assert logging.getLogger(name).level == logging.DEBUG
        assert await codes(b, (LOGGER, "0", [(name, DELETE, None)])) == [(0, None)]
        assert logging.getLogger(name).level == logging.NOTSET
        assert (await codes(b, (LOGGER, "0", [("no.such.logger", SET, "INFO")])))[0][0] == \
            ErrorCode.INVALID_CONFIG
        assert (await codes(b, (LOGGER, "0", [(name, SET, "LOUD")])))[0][0] == \
            ErrorCode.INVALID_CONFIG
        assert (await codes(b, (LOGGER, "0", [(name, APPEND, "INFO")])))[0][0] == \
            ErrorCode.INVALID_REQUEST
    run_broker(tmp_path, s)
