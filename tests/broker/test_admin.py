"""Metadata and the admin APIs on an in-process broker; topics persist across restarts."""

from gregor.protocol.errors import ErrorCode

from .handler_harness import (batch, call, committed, create, fetch_body, fresp, produce_body,
                              run_broker)


def _topic(name, partitions=1, rf=1, configs=None, assignments=None):
    return {"name": name, "num_partitions": partitions, "replication_factor": rf,
            "assignments": assignments or [],
            "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}


async def _create(b, *topics, version=4, validate_only=False):
    resp = await call(b, "CreateTopics", version, {"topics": list(topics), "timeout_ms": 1000,
                                                    "validate_only": validate_only})
    return {t["name"]: (t["error_code"], t["error_message"]) for t in resp["topics"]}


def test_metadata_lists_this_broker_as_leader_and_auto_creates(tmp_path):
    async def s(b):
        m = await call(b, "Metadata", 5, {"topics": [{"name": "auto"}],
                                          "allow_auto_topic_creation": True})
        assert m["brokers"] == [{"node_id": 0, "host": b.advertised_host,
                                 "port": b.advertised_port, "rack": None}]
        assert m["controller_id"] == 0 and m["cluster_id"] == b.cluster_id
        (t,) = m["topics"]
        assert t["error_code"] == 0 and [p["partition_index"] for p in t["partitions"]] == [0, 1]
        p = t["partitions"][0]
        assert (p["leader_id"], p["replica_nodes"], p["isr_nodes"]) == (0, [0], [0])
        m = await call(b, "Metadata", 5, {"topics": [{"name": "other"}],
                                          "allow_auto_topic_creation": False})
        assert m["topics"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        m = await call(b, "Metadata", 1, {"topics": None})          # all topics
        assert [t["name"] for t in m["topics"]] == ["auto"]
        m = await call(b, "Metadata", 0, {"topics": []})            # v0: empty = all
        assert [t["name"] for t in m["topics"]] == ["auto"]
        m = await call(b, "Metadata", 4, {"topics": [{"name": "bad name!"}]})
        assert m["topics"][0]["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
    run_broker(tmp_path, s, **{"num.partitions": "2"})


def test_metadata_v12_by_topic_id_and_leader_epochs(tmp_path):
    async def s(b):
        await call(b, "Metadata", 12, {"topics": [{"name": "t", "topic_id": bytes(16)}],
                                       "allow_auto_topic_creation": True})
        m = await call(b, "Metadata", 12, {"topics": None, "allow_auto_topic_creation": False})
        (t,) = m["topics"]
        assert t["name"] == "t" and len(t["topic_id"]) == 16 and t["topic_id"] != bytes(16)
        assert t["partitions"][0]["leader_epoch"] == 0
        by_id = await call(b, "Metadata", 12, {"topics": [{"name": None,
                                                           "topic_id": t["topic_id"]}],
                                               "allow_auto_topic_creation": False})
        assert by_id["topics"][0]["name"] == "t" and by_id["topics"][0]["error_code"] == 0
        unknown = await call(b, "Metadata", 12, {"topics": [{"name": None,
                                                             "topic_id": b"\x01" * 16}],
                                                 "allow_auto_topic_creation": False})
        assert unknown["topics"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID
        assert unknown["topics"][0]["topic_id"] == b"\x01" * 16
    run_broker(tmp_path, s)


def test_librdkafkas_all_topics_metadata_v12_request_decodes():
    """librdkafka leaves a 4-byte zero array count where v9+ has a 1-byte compact null when
    it asks for all topics: Kafka reads a null list and ignores the 3 bytes left over."""
    import pytest
    from gregor.protocol import messages
    from gregor.protocol.header import decode_request
    from gregor.protocol.primitives import DecodeError
    api = messages.api("Metadata")
    frame = bytes.fromhex("0003000c00000003000772646b61666b610000000000010000")
    _, body = decode_request(api, frame)
    assert body["topics"] is None
    with pytest.raises(DecodeError):          # any other surplus is still refused
        decode_request(api, frame + b"\x05")


def test_metadata_without_auto_create(tmp_path):
    async def s(b):
        m = await call(b, "Metadata", 1, {"topics": [{"name": "x"}]})
        assert m["topics"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert b.store.get("x") is None
    run_broker(tmp_path, s, **{"auto.create.topics.enable": "false"})


def test_create_topics_rules(tmp_path):
    async def s(b):
        res = await _create(b, _topic("ok", 3, configs={"retention.ms": "1000"}),
                            _topic("rf3", rf=3), _topic("bad/name"),
                            _topic("zero", 0), _topic("badcfg", configs={"retention.mss": "1"}),
                            _topic("dup"), _topic("dup"), _topic("dflt", -1, -1),
                            _topic("assigned", -1, -1, assignments=[
                                {"partition_index": 0, "broker_ids": [0]},
                                {"partition_index": 1, "broker_ids": [0]}]),
                            _topic("elsewhere", -1, -1, assignments=[
                                {"partition_index": 0, "broker_ids": [5]}]))
        assert res["ok"][0] == 0
        assert res["rf3"][0] == ErrorCode.INVALID_REPLICATION_FACTOR
        assert "1" in res["rf3"][1]
        assert res["bad/name"][0] == ErrorCode.INVALID_TOPIC_EXCEPTION
        assert res["zero"][0] == ErrorCode.INVALID_PARTITIONS
        assert res["badcfg"][0] == ErrorCode.INVALID_CONFIG
        assert res["dup"][0] == ErrorCode.INVALID_REQUEST
        assert res["dflt"][0] == 0 and b.store.get("dflt").partitions == 1
        assert res["assigned"][0] == 0 and b.store.get("assigned").partitions == 2
        assert res["elsewhere"][0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
        assert (await _create(b, _topic("ok")))["ok"][0] == ErrorCode.TOPIC_ALREADY_EXISTS
        assert (await _create(b, _topic("dry", 2), validate_only=True))["dry"][0] == 0
        assert b.store.get("dry") is None
        assert len(b.replica_manager.topic_partitions("ok")) == 3
        assert (await _create(b, _topic("v0"), version=0))["v0"][0] == 0
    run_broker(tmp_path, s)


def test_delete_topics_removes_data_and_wakes_fetchers(tmp_path):
    async def s(b):
        await create(b, "gone", 2)
        await call(b, "Produce", 8, produce_body("gone", batch(b"a")))
        await committed(b)
        from .handler_harness import start_call
        waiting = start_call(b, "Fetch", 11, fetch_body("gone", 1, max_wait_ms=10_000))
        resp = await call(b, "DeleteTopics", 3, {"topic_names": ["gone", "never"],
                                                 "timeout_ms": 1000})
        codes = {r["name"]: r["error_code"] for r in resp["responses"]}
        assert codes == {"gone": 0, "never": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert fresp(await waiting)["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert not (tmp_path / "gone-0").exists() and not (tmp_path / "gone-1").exists()
        m = await call(b, "Metadata", 4, {"topics": [{"name": "gone"}],
                                          "allow_auto_topic_creation": False})
        assert m["topics"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    run_broker(tmp_path, s)


def test_delete_topics_can_be_disabled(tmp_path):
    async def s(b):
        await create(b, "keep")
        resp = await call(b, "DeleteTopics", 3, {"topic_names": ["keep"], "timeout_ms": 1000})
        assert resp["responses"][0]["error_code"] == ErrorCode.TOPIC_DELETION_DISABLED
    run_broker(tmp_path, s, **{"delete.topic.enable": "false"})


def test_create_partitions(tmp_path):
    async def s(b):
        await create(b, "t", 2)

        async def cp(count, validate_only=False, name="t"):
            r = await call(b, "CreatePartitions", 1, {
                "topics": [{"name": name, "count": count, "assignments": None}],
                "timeout_ms": 1000, "validate_only": validate_only})
            return r["results"][0]["error_code"]

        assert await cp(4, validate_only=True) == 0 and b.store.get("t").partitions == 2
        assert await cp(4) == 0 and b.store.get("t").partitions == 4
        assert b.replica_manager.get("t", 3) is not None
        assert await cp(3) == ErrorCode.INVALID_PARTITIONS
        assert await cp(5, name="nope") == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    run_broker(tmp_path, s)


def test_describe_configs(tmp_path):
    async def s(b):
        await create(b, "t", configs={"retention.ms": 1234})

        async def dc(rtype, name, keys=None, version=1):
            r = await call(b, "DescribeConfigs", version, {
                "resources": [{"resource_type": rtype, "resource_name": name,
                               "configuration_keys": keys}], "include_synonyms": True})
            return r["results"][0]

        res = await dc(2, "t")
        cfg = {c["name"]: c for c in res["configs"]}
        assert cfg["retention.ms"]["value"] == "1234" and cfg["retention.ms"]["config_source"] == 1
        assert cfg["segment.bytes"]["value"] == "1073741824"
        assert cfg["max.message.bytes"]["config_source"] == 4      # set on the broker below
        assert cfg["max.message.bytes"]["value"] == "5000"
        assert cfg["cleanup.policy"]["config_source"] == 5
        res = await dc(2, "t", ["retention.ms"], version=0)
        assert [c["name"] for c in res["configs"]] == ["retention.ms"]
        assert not res["configs"][0]["is_default"]
        assert (await dc(2, "missing"))["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        broker_cfg = {c["name"]: c["value"] for c in (await dc(4, "0"))["configs"]}
        assert broker_cfg["message.max.bytes"] == "5000" and broker_cfg["num.partitions"] == "1"
        assert (await dc(4, "7"))["error_code"] != 0
    run_broker(tmp_path, s, **{"message.max.bytes": "5000"})


def test_delete_records(tmp_path):
    async def s(b):
        await create(b, "t")
        for v in (b"a", b"b", b"c"):
            await call(b, "Produce", 8, produce_body("t", batch(v)))
        await committed(b)

        async def dr(offset):
            r = await call(b, "DeleteRecords", 1, {"topics": [{"name": "t", "partitions": [
                {"partition_index": 0, "offset": offset}]}], "timeout_ms": 1000})
            return r["topics"][0]["partitions"][0]

        r = await dr(2)
        assert (r["error_code"], r["low_watermark"]) == (0, 2)
        f = fresp(await call(b, "Fetch", 11, fetch_body("t", 0)))
        assert f["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE and f["log_start_offset"] == 2
        assert (await dr(10))["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
        assert (await dr(-1))["low_watermark"] == 3
    run_broker(tmp_path, s)


def test_topics_configs_and_data_survive_a_restart(tmp_path):
    async def first(b):
        await create(b, "kept", 2, {"retention.ms": 99999})
        await create(b, "dropped")
        await call(b, "Produce", 8, produce_body("kept", batch(b"x", b"y"), partition=1))
        await call(b, "DeleteTopics", 3, {"topic_names": ["dropped"], "timeout_ms": 1000})
        return b.cluster_id
    cluster = run_broker(tmp_path, first)

    async def second(b):
        assert b.cluster_id == cluster
        assert b.store.get("dropped") is None
        t = b.store.get("kept")
        assert t.partitions == 2 and b.topic_config(t)["retention.ms"] == 99999
        f = fresp(await call(b, "Fetch", 11, fetch_body("kept", 0, partition=1)))
        from .handler_harness import values_of
        assert values_of(f["records"]) == [b"x", b"y"] and f["high_watermark"] == 2
    run_broker(tmp_path, second)


def test_api_versions_table(tmp_path):
    async def s(b):
        r = await call(b, "ApiVersions", 2, {})
        table = {k["api_key"]: (k["min_version"], k["max_version"]) for k in r["api_keys"]}
        must = {0: 3, 1: 4, 2: 1, 3: 5, 22: 0}      # single versions old librdkafka checks
        for key, v in must.items():
            assert table[key][0] <= v <= table[key][1], (key, table[key])
        assert table[3][0] <= 4
        # transactions: v0 of every API (aiokafka and librdkafka send v0), up to what
        # kafka-python sends (v3, flexible)
        for key in (24, 25, 26):
            assert table[key][0] == 0 and table[key][1] >= 3, (key, table[key])
        assert table[22] == (0, 4)
        assert table[10][0] == 0     # FindCoordinator v0: librdkafka's condition for LZ4
        # groups: librdkafka 2.0.2 (kcat) enables its balanced consumer only when these
        # versions are in the ranges; the newest clients send JoinGroup v5-7, OffsetCommit and
        # OffsetFetch v8-9
        for key, v in {10: 0, 8: 2, 9: 1, 11: 0, 14: 0, 12: 0, 13: 0}.items():
            assert table[key][0] <= v <= table[key][1], (key, table[key])
        assert table[11][1] >= 7 and table[8][1] == 9 and table[9][1] == 9
        assert table[28][0] == 0 and table[28][1] >= 3     # TxnOffsetCommit
        # KIP-848: librdkafka needs ConsumerGroupHeartbeat v1 exactly, and Metadata by topic
        # id (v12) to resolve its assignment; ConsumerGroupDescribe is advertised because
        # classic groups answer GROUP_ID_NOT_FOUND there (tests/broker/group)
        assert table[68] == (0, 1) and table[69] == (0, 0)
        assert table[3][1] == 13     # KIP-1102's v13, which librdkafka 2.10+ asks for
        # kafka-python infers a modern broker from this table
        from kafka.protocol.broker_version_data import infer_broker_version_from_api_versions
        assert infer_broker_version_from_api_versions(table) >= (1, 0)
    run_broker(tmp_path, s)


def test_alter_configs_replaces_topic_settings_and_applies_them(tmp_path):
    async def s(b):
        await create(b, "t", configs={"retention.ms": 1000, "max.message.bytes": 100000})

        async def alter(configs, name="t", rtype=2, validate_only=False):
            r = await call(b, "AlterConfigs", 1, {"resources": [{
                "resource_type": rtype, "resource_name": name,
                "configs": [{"name": k, "value": v} for k, v in configs.items()]}],
                "validate_only": validate_only})
            return r["responses"][0]["error_code"]

        assert await alter({"max.message.bytes": "200"}, validate_only=True) == 0
        assert b.topic_config("t")["max.message.bytes"] == 100000
        assert await alter({"max.message.bytes": "200"}) == 0
        cfg = b.topic_config("t")
        assert cfg["max.message.bytes"] == 200 and cfg["retention.ms"] == 7 * 24 * 3600 * 1000
        r = await call(b, "Produce", 8, produce_body("t", batch(b"x" * 500)))
        assert r["responses"][0]["partition_responses"][0]["error_code"] == \
            ErrorCode.MESSAGE_TOO_LARGE
        assert b.replica_manager.get("t", 0).log.config.max_message_bytes == 200
        assert await alter({"nonsense": "1"}) == ErrorCode.INVALID_CONFIG
        assert await alter({}, name="missing") == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert await alter({}, name="0", rtype=4) == ErrorCode.INVALID_REQUEST
    run_broker(tmp_path, s)


def test_find_coordinator(tmp_path):
    async def s(b):
        r = await call(b, "FindCoordinator", 0, {"key": "group-1"})
        assert (r["error_code"], r["node_id"], r["port"]) == (0, 0, b.advertised_port)
        r = await call(b, "FindCoordinator", 2, {"key": "tx", "key_type": 1})
        assert (r["error_code"], r["node_id"]) == (0, 0)
        r = await call(b, "FindCoordinator", 2, {"key": "tx", "key_type": 7})
        assert r["error_code"] == ErrorCode.INVALID_REQUEST
        r = await call(b, "FindCoordinator", 4, {"key_type": 0, "coordinator_keys": ["a", ""]})
        assert [(c["key"], c["error_code"], c["node_id"]) for c in r["coordinators"]] == \
            [("a", 0, 0), ("", ErrorCode.INVALID_REQUEST, -1)]
        assert b.store.get("__consumer_offsets").partitions == 50
    run_broker(tmp_path, s)


def test_describe_cluster(tmp_path):
    async def s(b):
        for version in (0, 1):
            r = await call(b, "DescribeCluster", version,
                           {"include_cluster_authorized_operations": False})
            assert (r["error_code"], r["cluster_id"], r["controller_id"]) == (0, b.cluster_id, 0)
            assert [x["broker_id"] for x in r["brokers"]] == [0]
        r = await call(b, "DescribeCluster", 1, {"endpoint_type": 2})
        assert r["error_code"] != 0
    run_broker(tmp_path, s)


def test_api_versions_v3_checks_the_client_software_fields(tmp_path):
    async def s(b):
        ok = await call(b, "ApiVersions", 3, {"client_software_name": "librdkafka",
                                              "client_software_version": "2.3.0"})
        assert ok["error_code"] == 0 and ok["api_keys"]
        bad = await call(b, "ApiVersions", 3, {"client_software_name": "bad name!",
                                               "client_software_version": "1"})
        assert bad["error_code"] == ErrorCode.INVALID_REQUEST
    run_broker(tmp_path, s)


def test_partition_budget(tmp_path):
    async def s(b):
        assert b.max_partitions == 5
        res = await _create(b, _topic("four", 4), _topic("two", 2))
        assert res["four"][0] == 0 and res["two"][0] == ErrorCode.POLICY_VIOLATION
        assert "gregor.max.partitions" in res["two"][1]
        m = await call(b, "Metadata", 4, {"topics": [{"name": "auto"}],
                                          "allow_auto_topic_creation": True})
        assert m["topics"][0]["error_code"] == 0                      # 1 more fits
        m = await call(b, "Metadata", 4, {"topics": [{"name": "auto2"}],
                                          "allow_auto_topic_creation": True})
        assert m["topics"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        r = await call(b, "CreatePartitions", 1, {"topics": [{"name": "four", "count": 6,
                                                               "assignments": None}],
                                                   "timeout_ms": 1000, "validate_only": False})
        assert r["results"][0]["error_code"] == ErrorCode.POLICY_VIOLATION
    run_broker(tmp_path, s, **{"gregor.max.partitions": "5"})


def test_default_partition_budget_follows_the_open_file_limit():
    import resource

    from gregor.broker.broker import partition_budget
    from gregor.broker.config import BrokerConfig
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    budget = partition_budget(BrokerConfig())
    assert 100 <= budget
    if soft != resource.RLIM_INFINITY:
        soft_after, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        assert budget * 4 + 1000 <= soft_after


def test_creating_a_topic_makes_its_list_durable_before_any_partition_directory(tmp_path,
                                                                                monkeypatch):
    """An acknowledged CreateTopics survives a power cut through the topic list alone: it is
    fsynced (file, then the data directory) before the partitions' directories are made, so
    no partition directory can be durable without the topic that names it (a directory the
    list does not name would be adopted with default configs). The directories themselves
    are rebuilt when lost (tests/log/test_log_creation_durability.py)."""
    import os
    fsynced = []
    real = os.fsync

    def record(fd):
        path = os.path.realpath(f"/proc/self/fd/{fd}")
        fsynced.append((path, sorted(p.name for p in tmp_path.glob("made-*"))))
        real(fd)

    async def s(b):
        monkeypatch.setattr(os, "fsync", record)
        r = await call(b, "CreateTopics", 4, {"topics": [
            {"name": "made", "num_partitions": 3, "replication_factor": 1, "assignments": [],
             "configs": [{"name": "cleanup.policy", "value": "compact"}]}],
            "timeout_ms": 1000, "validate_only": False})
        monkeypatch.setattr(os, "fsync", real)
        assert r["topics"][0]["error_code"] == 0
        data = tmp_path.resolve()
        assert [path for path, _ in fsynced] == [str(data / "gregor-topics.json.tmp"), str(data)]
        assert all(dirs == [] for _, dirs in fsynced)      # no partition directory yet
        assert sorted(p.name for p in tmp_path.glob("made-*")) == ["made-0", "made-1", "made-2"]
    run_broker(tmp_path, s)
