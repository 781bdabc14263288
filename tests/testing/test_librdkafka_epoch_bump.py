"""A characterization of librdkafka (confluent-kafka), not of the broker: when a message of an
idempotent producer reaches message.timeout.ms, librdkafka bumps the producer epoch and re-sends
its other queued messages from sequence 0 of the new epoch, including one whose first attempt
was written but not answered. The log then holds two copies of it under one producer id and
consecutive epochs; the Jepsen run reports such a copy as `epoch-bump-duplicate`
(docs/jepsen.md). Should librdkafka change, this test shows it."""
from __future__ import annotations

import os
import threading
import time

from confluent_kafka import KafkaError, Producer

from gregor.testing import DROP, PASS, Broker
from gregor.testing.history.log_evidence import EPOCH_BUMP, reclassify_duplicates
from gregor.testing.history.report import Report
from gregor.testing.txn_index_check import batch_headers

MESSAGE_TIMEOUT_MS = 6000


def test_a_timed_out_message_makes_librdkafka_resend_a_written_one_under_a_new_epoch():
    with Broker() as b:
        b.create_topic("t", 2)
        losing = threading.Event()        # append each Produce, then drop its response
        appended = threading.Event()

        def lose_responses(req):
            if not losing.is_set():
                return PASS
            for td in req["topic_data"]:
                for pd in td["partition_data"]:
                    part = b.broker.replica_manager.get(td["name"], pd["index"])
                    part.append_records_to_leader(bytearray(pd["records"]), 1,
                                                  int(time.time() * 1000))
            appended.set()
            return DROP

        b.intercept("Produce", lose_responses)
        p = Producer({"bootstrap.servers": b.bootstrap_servers, "enable.idempotence": True,
                      "acks": "all", "request.timeout.ms": 1000, "socket.timeout.ms": 1000,
                      "message.timeout.ms": MESSAGE_TIMEOUT_MS, "retry.backoff.ms": 100,
                      "linger.ms": 0})
        reports = {}

        def delivered(err, msg):
            reports[msg.value()] = err
            if msg.value() == b"B":       # B timed out: the re-sends that follow get through
                losing.clear()

        p.produce("t", b"warm", partition=0)            # the producer id, answered
        assert p.flush(MESSAGE_TIMEOUT_MS / 1000 * 5) == 0
        losing.set()
        p.produce("t", b"B", partition=1, on_delivery=delivered)
        assert appended.wait(MESSAGE_TIMEOUT_MS / 1000 * 5)
        # A goes out well before B times out, so A's own timeout is still far off when the
        # epoch is bumped: A is written, unanswered, then re-sent
        time.sleep(MESSAGE_TIMEOUT_MS / 1000 / 3)
        p.produce("t", b"A", partition=0, on_delivery=delivered)
        assert p.flush(MESSAGE_TIMEOUT_MS / 1000 * 5) == 0

        assert reports[b"B"] is not None and reports[b"B"].code() == KafkaError._MSG_TIMED_OUT
        assert reports[b"A"] is None

        def copies_of_a(broker):
            log = broker.replica_manager.get("t", 0).log
            return log.dir, [(h.base_offset, h.producer_id, h.producer_epoch, h.base_sequence)
                             for h in batch_headers(log.dir) if h.base_offset >= 1]

        directory, copies = b.run_on_loop(copies_of_a)
        del p                               # no reconnecting to the stopped broker

        # offset 0 is "warm"; A sits at 1 (first attempt) and 2 (the re-send)
        assert len(copies) == 2, copies
        (o1, pid1, epoch1, _), (o2, pid2, epoch2, seq2) = copies
        assert pid1 == pid2 >= 0
        assert epoch2 == epoch1 + 1 and seq2 == 0
        # and the run's classifier calls it what it is
        report = Report({"duplicate": [{"key": "t/0", "value": 1, "offsets": [o1, o2],
                                        "writer": 0}]})
        after = reclassify_duplicates(report, [os.path.dirname(directory)],
                                      {0: "confluent-kafka"})
        assert after.valid and len(after.anomalies[EPOCH_BUMP]) == 1
