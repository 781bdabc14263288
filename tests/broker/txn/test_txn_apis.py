"""The transaction API handlers on an in-process broker (markers stubbed until the partition
side lands in the same tree)."""
from __future__ import annotations

from gregor.protocol.errors import ErrorCode as E
from tests.broker.handler_harness import call, run_broker

SETTINGS = {"transaction_state_log_num_partitions": 3}


def _init(version=4, tid="t", timeout=60000):
    body = {"transactional_id": tid, "transaction_timeout_ms": timeout}
    return ("InitProducerId", version, body)


def _add(tid, pid, epoch, topic, parts, version=3):
    return ("AddPartitionsToTxn", version, {
        "v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": topic, "partitions": parts}]})


def _codes(resp):
    return {(t["name"], p["partition_index"]): p["partition_error_code"]
            for t in resp["results_by_topic_v3_and_below"] for p in t["results_by_partition"]}


def test_find_coordinator_for_a_transactional_id_creates_the_state_topic(tmp_path):
    async def scenario(b):
        assert b.store.get("__transaction_state") is None
        r = await call(b, "FindCoordinator", 1, {"key": "t", "key_type": 1})
        assert r["error_code"] == E.NONE and r["node_id"] == b.broker_id
        assert b.store.get("__transaction_state").partitions == 3
        assert b.topic_config("__transaction_state")["cleanup.policy"] == ["compact"] or \
            "compact" in str(b.topic_config("__transaction_state")["cleanup.policy"])
    run_broker(tmp_path, scenario, **SETTINGS)


def test_init_add_and_errors_by_version(tmp_path):
    async def scenario(b):
        r = await call(b, *_init(version=0))
        assert (r["error_code"], r["producer_epoch"]) == (E.NONE, 0)
        pid = r["producer_id"]
        r = await call(b, *_init(version=4))
        assert (r["error_code"], r["producer_id"], r["producer_epoch"]) == (E.NONE, pid, 1)
        await call(b, "CreateTopics", 4, {"topics": [{"name": "out", "num_partitions": 2,
                                                       "replication_factor": 1,
                                                       "assignments": [], "configs": []}],
                                           "timeout_ms": 1000, "validate_only": False})
        ok = await call(b, *_add("t", pid, 1, "out", [0, 1]))
        assert set(_codes(ok).values()) == {E.NONE}
        # a stale epoch: PRODUCER_FENCED from v2, INVALID_PRODUCER_EPOCH before
        assert set(_codes(await call(b, *_add("t", pid, 0, "out", [0]))).values()) == \
            {E.PRODUCER_FENCED}
        assert set(_codes(await call(b, *_add("t", pid, 0, "out", [0], version=1)))
                   .values()) == {E.INVALID_PRODUCER_EPOCH}
        # an unknown topic fails alone; the rest is not attempted
        mixed = await call(b, "AddPartitionsToTxn", 0, {
            "v3_and_below_transactional_id": "t", "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": 1,
            "v3_and_below_topics": [{"name": "out", "partitions": [0]},
                                    {"name": "nope", "partitions": [0]}]})
        assert _codes(mixed) == {("out", 0): E.OPERATION_NOT_ATTEMPTED,
                                 ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
        r = await call(b, "EndTxn", 0, {"transactional_id": "t", "producer_id": pid,
                                        "producer_epoch": 0, "committed": True})
        assert r["error_code"] == E.INVALID_PRODUCER_EPOCH
        r = await call(b, *_init(version=0, timeout=10**9))
        assert r["error_code"] == E.INVALID_TRANSACTION_TIMEOUT
        d = await call(b, "DescribeTransactions", 0, {"transactional_ids": ["t", "x"]})
        st = {s["transactional_id"]: s for s in d["transaction_states"]}
        assert st["t"]["transaction_state"] == "Ongoing" and st["t"]["producer_id"] == pid
        assert st["x"]["error_code"] == E.TRANSACTIONAL_ID_NOT_FOUND
        lst = await call(b, "ListTransactions", 1, {"state_filters": ["Ongoing"],
                                                    "producer_id_filters": [],
                                                    "duration_filter": -1})
        assert [s["transactional_id"] for s in lst["transaction_states"]] == ["t"]
    run_broker(tmp_path, scenario, **SETTINGS)


def test_end_txn_writes_markers_and_state_survives_restart(tmp_path):
    written = []

    def stub_markers(b):
        from gregor.protocol.records.batch import encode_control_batch

        def marker(self, pid, epoch, commit, coordinator_epoch, _w=written):
            _w.append((self.topic, self.index, pid, epoch, commit))
            data = encode_control_batch(commit, producer_id=pid, producer_epoch=epoch,
                                        coordinator_epoch=coordinator_epoch)
            return self.append_records_to_leader(bytearray(data), -1, 0).last_offset
        for p in b.replica_manager.partitions.values():
            p.append_control_marker = marker.__get__(p)

    async def first(b):
        r = await call(b, *_init())
        pid = r["producer_id"]
        await call(b, "CreateTopics", 4, {"topics": [{"name": "out", "num_partitions": 1,
                                                       "replication_factor": 1,
                                                       "assignments": [], "configs": []}],
                                           "timeout_ms": 1000, "validate_only": False})
        stub_markers(b)
        await call(b, *_add("t", pid, 0, "out", [0]))
        r = await call(b, "EndTxn", 3, {"transactional_id": "t", "producer_id": pid,
                                        "producer_epoch": 0, "committed": False})
        assert r["error_code"] == E.NONE
        await b.txn.coordinator.idle()
        assert written == [("out", 0, pid, 0, False)]
        return pid

    pid = run_broker(tmp_path, first, **SETTINGS)

    async def second(b):
        d = await call(b, "DescribeTransactions", 0, {"transactional_ids": ["t"]})
        s = d["transaction_states"][0]
        assert (s["transaction_state"], s["producer_id"], s["producer_epoch"]) == \
            ("CompleteAbort", pid, 0)
        r = await call(b, *_init())
        assert (r["producer_id"], r["producer_epoch"]) == (pid, 1)
    run_broker(tmp_path, second, **SETTINGS)
