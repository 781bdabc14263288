"""confluent-kafka (librdkafka) under the shared workload shape.

Errors: a delivery report's or an exception's KafkaError, by its name (librdkafka's local
errors start with "_": timeouts, transport failures, all brokers down: all info).
"""
from __future__ import annotations

import time

from gregor.testing.history.op import key as key_of
from gregor.testing.history.op import split_key
from gregor.testing.history.workloads.errors import classify_name
from gregor.testing.history.workloads.shape import Client


class ConfluentClient(Client):
    name = "confluent-kafka"

    def __init__(self, bootstrap, extra):
        super().__init__(bootstrap, extra)
        import confluent_kafka
        self.ck = confluent_kafka

    def error_name(self, exc) -> str:
        if isinstance(exc, self.ck.KafkaException) and exc.args and \
                isinstance(exc.args[0], self.ck.KafkaError):
            return exc.args[0].name()
        if isinstance(exc, self.ck.KafkaError):
            return exc.name()
        return type(exc).__name__

    def classify(self, exc):
        if isinstance(exc, (self.ck.KafkaException, self.ck.KafkaError, TimeoutError)):
            return classify_name(self.error_name(exc))
        return None

    # --- producing ------------------------------------------------------------------------
    def producer(self, *, acks, transactional_id=None):
        cfg = {"bootstrap.servers": self.bootstrap, "acks": acks, "linger.ms": 1,
               "enable.idempotence": acks == "all", "request.timeout.ms": 3000,
               "message.timeout.ms": 10000, "socket.timeout.ms": 3000,
               "retry.backoff.ms": 100, "log.connection.close": False}
        if transactional_id:
            cfg.update({"transactional.id": transactional_id, "transaction.timeout.ms": 30000})
        cfg.update(self.extra)
        p = self.ck.Producer(cfg)
        if transactional_id:
            p.init_transactions(10)
        return p

    def produce(self, p, records, timeout):
        results = [None] * len(records)

        def report(i):
            def on_delivery(err, msg):
                results[i] = (None, self.ck.KafkaException(err)) if err is not None \
                    else (msg.offset(), None)
            return on_delivery
        for i, (topic, partition, value) in enumerate(records):
            p.produce(topic, str(value).encode(), partition=partition, on_delivery=report(i))
        deadline = time.monotonic() + timeout + 2
        while any(r is None for r in results) and time.monotonic() < deadline:
            p.poll(0.05)
        return [r if r is not None else (None, TimeoutError("no delivery report"))
                for r in results]

    def begin(self, p):
        p.begin_transaction()

    def commit(self, p, timeout):
        p.commit_transaction(timeout)

    def abort(self, p, timeout):
        p.abort_transaction(timeout)

    def close_producer(self, p):
        p.flush(1)

    # --- consuming ------------------------------------------------------------------------
    def consumer(self, group, isolation):
        cfg = {"bootstrap.servers": self.bootstrap, "group.id": group,
               "enable.auto.commit": False, "auto.offset.reset": "earliest",
               "isolation.level": isolation, "socket.timeout.ms": 3000,
               "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
               "fetch.wait.max.ms": 100, "enable.partition.eof": False,
               "log.connection.close": False}
        cfg.update(self.extra)
        return self.ck.Consumer(cfg)

    def assign(self, c, keys):
        c.assign([self.ck.TopicPartition(*split_key(k), self.ck.OFFSET_BEGINNING)
                  for k in keys])

    def subscribe(self, c, topics, on_assign):
        c.subscribe(topics, on_assign=lambda _c, parts: on_assign(
            [key_of(tp.topic, tp.partition) for tp in parts]))

    def poll(self, c, timeout):
        out = []
        for m in c.consume(500, timeout):
            if m.error() is not None:
                raise self.ck.KafkaException(m.error())
            out.append((key_of(m.topic(), m.partition()), m.offset(), int(m.value())))
        return out

    def commit_offsets(self, c):
        try:
            c.commit(asynchronous=False)
        except self.ck.KafkaException as e:
            if e.args[0].code() != self.ck.KafkaError._NO_OFFSET:
                raise

    def end_offsets(self, c, keys):
        return {k: c.get_watermark_offsets(self.ck.TopicPartition(*split_key(k)),
                                           timeout=5)[1] for k in keys}

    def positions(self, c, keys):
        tps = c.position([self.ck.TopicPartition(*split_key(k)) for k in keys])
        return {key_of(tp.topic, tp.partition): tp.offset for tp in tps}

    def close_consumer(self, c):
        c.close()
