"""The transactional producer's state machine (transactions.py), without a network."""
from __future__ import annotations

import pytest

from gregor.client.producer import transactions as tx
from gregor.client.producer.transactions import TransactionError, TransactionManager
from gregor.protocol.errors import ErrorCode as E


class B:
    """A stand-in batch."""

    def __init__(self, topic, partition):
        self.topic, self.partition = topic, partition
        self.in_retry = False
        self.base_sequence = -1
        self.producer_id = self.producer_epoch = -1
        self.record_count = 1
        self.data = None


def ready_manager():
    m = TransactionManager("t", 60000)
    r = m.init_transactions()
    req = m.next_request(flushed=True)
    assert req.api == "InitProducerId" and req.body["transactional_id"] == "t"
    assert m.on_response(req, {"error_code": 0, "producer_id": 7, "producer_epoch": 2}) == "ok"
    r.wait(0, "init")
    assert m.txn_state == tx.READY_TXN
    return m


def test_batches_wait_until_their_partition_is_added():
    m = ready_manager()
    m.begin_transaction()
    b = B("out", 1)
    assert not m.can_send(b)
    req = m.next_request(flushed=False)
    assert req.api == "AddPartitionsToTxn"
    assert req.body["v3_and_below_topics"] == [{"name": "out", "partitions": [1]}]
    assert req.body["v3_and_below_producer_id"] == 7
    assert not m.can_send(b)          # still being added: not queued twice
    assert m.next_request(flushed=False) is None
    m.on_response(req, {"results_by_topic_v3_and_below": [
        {"name": "out", "results_by_partition": [{"partition_index": 1,
                                                  "partition_error_code": 0}]}]})
    assert m.can_send(b)


def test_end_txn_waits_for_the_flush_and_for_partitions_being_added():
    m = ready_manager()
    m.begin_transaction()
    m.can_send(B("out", 0))
    add = m.next_request(flushed=False)
    r = m.begin_commit()
    assert m.next_request(flushed=True) is None          # AddPartitions in flight
    m.on_response(add, {"results_by_topic_v3_and_below": [
        {"name": "out", "results_by_partition": [{"partition_index": 0,
                                                  "partition_error_code": 0}]}]})
    assert m.next_request(flushed=False) is None          # records still in flight
    end = m.next_request(flushed=True)
    assert end.api == "EndTxn" and end.body["committed"] is True
    m.on_response(end, {"error_code": 0})
    r.wait(0, "commit")
    assert m.txn_state == tx.READY_TXN and not m.in_txn


def test_an_empty_transaction_ends_without_the_coordinator():
    m = ready_manager()
    m.begin_transaction()
    m.begin_commit().wait(0, "commit")
    assert m.next_request(flushed=True) is None and m.txn_state == tx.READY_TXN


def test_retriable_and_coordinator_errors_put_the_request_back():
    m = ready_manager()
    m.begin_transaction()
    m.can_send(B("out", 0))
    add = m.next_request(flushed=True)
    resp = {"results_by_topic_v3_and_below": [{"name": "out", "results_by_partition": [
        {"partition_index": 0, "partition_error_code": E.CONCURRENT_TRANSACTIONS}]}]}
    assert m.on_response(add, resp) == "retry"
    again = m.next_request(flushed=True)
    assert again.api == "AddPartitionsToTxn"
    m.coordinators[("txn", "t")] = 3
    resp["results_by_topic_v3_and_below"][0]["results_by_partition"][0][
        "partition_error_code"] = E.NOT_COORDINATOR
    assert m.on_response(again, resp) == "lookup"
    assert ("txn", "t") not in m.coordinators
    assert m.next_request(flushed=True).api == "AddPartitionsToTxn"


def test_fencing_is_fatal_and_fails_everything_after():
    m = ready_manager()
    m.begin_transaction()
    m.can_send(B("out", 0))
    add = m.next_request(flushed=True)
    out = m.on_response(add, {"results_by_topic_v3_and_below": [
        {"name": "out", "results_by_partition": [
            {"partition_index": 0, "partition_error_code": E.PRODUCER_FENCED}]}]})
    assert out == "fatal" and m.txn_state == tx.FATAL_ERROR
    with pytest.raises(TransactionError) as e:
        m.check_can_send()
    assert e.value.fatal and "fenced" in str(e.value)
    with pytest.raises(TransactionError):
        m.begin_abort()


def test_a_failed_record_makes_the_transaction_abortable():
    m = ready_manager()
    m.begin_transaction()
    m.on_batch_failed(RuntimeError("too large"), E.MESSAGE_TOO_LARGE)
    assert m.txn_state == tx.ABORTABLE_ERROR
    with pytest.raises(TransactionError) as e:
        m.begin_commit()
    assert e.value.abortable and e.value.txn_requires_abort()
    r = m.begin_abort()
    assert m.purge_requested
    r.wait(0, "abort")                    # nothing reached the coordinator
    assert m.txn_state == tx.READY_TXN


def test_a_stale_epoch_on_a_record_is_fatal():
    m = ready_manager()
    m.begin_transaction()
    m.on_batch_failed(RuntimeError("epoch"), E.INVALID_PRODUCER_EPOCH)
    assert m.txn_state == tx.FATAL_ERROR


def test_sequence_trouble_aborts_then_bumps_the_epoch():
    m = ready_manager()
    m.begin_transaction()
    m.can_send(B("out", 0))
    add = m.next_request(flushed=True)
    m.on_response(add, {"results_by_topic_v3_and_below": [
        {"name": "out", "results_by_partition": [{"partition_index": 0,
                                                  "partition_error_code": 0}]}]})
    m.request_bump("OUT_OF_ORDER_SEQUENCE_NUMBER for out-0")
    assert m.txn_state == tx.ABORTABLE_ERROR
    r = m.begin_abort()
    end = m.next_request(flushed=True)
    assert end.api == "EndTxn" and end.body["committed"] is False
    m.on_response(end, {"error_code": 0})
    init = m.next_request(flushed=True)
    assert init.api == "InitProducerId"
    assert (init.body["producer_id"], init.body["producer_epoch"]) == (7, 2)   # KIP-360
    m.on_response(init, {"error_code": 0, "producer_id": 7, "producer_epoch": 3})
    r.wait(0, "abort")
    assert m.txn_state == tx.READY_TXN and m.producer_epoch == 3


def test_send_offsets_goes_to_the_group_coordinator():
    m = ready_manager()
    m.begin_transaction()
    r = m.send_offsets([("in", 0, 42, "meta")], {"group_id": "g", "generation_id": 5,
                                                  "member_id": "m-1",
                                                  "group_instance_id": None})
    add = m.next_request(flushed=True)
    assert add.api == "AddOffsetsToTxn" and add.body["group_id"] == "g"
    assert m.coordinator_key(add) == ("txn", "t")
    m.on_response(add, {"error_code": 0})
    commit = m.next_request(flushed=True)
    assert commit.api == "TxnOffsetCommit" and m.coordinator_key(commit) == ("group", "g")
    assert commit.body["generation_id"] == 5 and commit.body["topics"] == [
        {"name": "in", "partitions": [{"partition_index": 0, "committed_offset": 42,
                                       "committed_leader_epoch": -1,
                                       "committed_metadata": "meta"}]}]
    m.on_response(commit, {"topics": [{"name": "in", "partitions": [
        {"partition_index": 0, "error_code": E.ILLEGAL_GENERATION}]}]})
    with pytest.raises(TransactionError) as e:
        r.wait(0, "send offsets")
    assert e.value.abortable and m.txn_state == tx.ABORTABLE_ERROR


def test_init_errors():
    m = TransactionManager("t", 60000)
    r = m.init_transactions()
    req = m.next_request(flushed=True)
    assert m.on_response(req, {"error_code": E.CONCURRENT_TRANSACTIONS, "producer_id": -1,
                               "producer_epoch": -1}) == "retry"
    req = m.next_request(flushed=True)
    assert m.on_response(req, {"error_code": E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                               "producer_id": -1, "producer_epoch": -1}) == "fatal"
    with pytest.raises(TransactionError) as e:
        r.wait(0, "init")
    assert e.value.fatal
