"""gregor's own client (gregor.Producer / gregor.Consumer) under the shared workload shape.

Errors: gregor.protocol.errors.KafkaError carries Kafka's `name`; gregor.client.errors'
timeouts and connection errors are info. Extra settings are Kafka's names, as the client
takes them.
"""
from __future__ import annotations

from gregor.testing.history.op import key as key_of
from gregor.testing.history.op import split_key
from gregor.testing.history.workloads.errors import classify_name
from gregor.testing.history.workloads.shape import Client


class GregorClient(Client):
    name = "gregor"

    def __init__(self, bootstrap, extra):
        super().__init__(bootstrap, extra)
        from gregor.client import errors as client_errors
        from gregor.protocol import errors as protocol_errors
        self.client_errors, self.protocol_errors = client_errors, protocol_errors

    def error_name(self, exc) -> str:
        if isinstance(exc, self.protocol_errors.KafkaError):
            return exc.name
        return type(exc).__name__

    def classify(self, exc):
        if isinstance(exc, (self.protocol_errors.KafkaError, self.client_errors.ClientError,
                            TimeoutError, OSError)):
            return classify_name(self.error_name(exc))
        return None

    def producer(self, *, acks, transactional_id=None):
        from gregor import Producer
        cfg = {"bootstrap.servers": self.bootstrap, "acks": acks,
               "enable.idempotence": acks == "all", "linger.ms": 1,
               "request.timeout.ms": 3000, "delivery.timeout.ms": 10000,
               "retry.backoff.ms": 100}
        if transactional_id:
            cfg.update({"transactional.id": transactional_id, "transaction.timeout.ms": 30000})
        cfg.update(self.extra)
        p = Producer(cfg)
        if transactional_id:
            try:
                p.init_transactions(10)
            except BaseException:
                p.close(1)
                raise
        return p

    def produce(self, p, records, timeout):
        futures = [p.send(topic, str(value).encode(), partition=partition)
                   for topic, partition, value in records]
        out = []
        for f in futures:
            try:
                out.append((f.get(timeout).offset, None))
            except Exception as e:
                out.append((None, e))
        return out

    def begin(self, p):
        p.begin_transaction()

    def commit(self, p, timeout):
        p.commit_transaction(timeout)

    def abort(self, p, timeout):
        p.abort_transaction(timeout)

    def close_producer(self, p):
        p.close(1)

    def consumer(self, group, isolation):
        from gregor import Consumer
        cfg = {"bootstrap.servers": self.bootstrap, "group.id": group,
               "enable.auto.commit": False, "auto.offset.reset": "earliest",
               "isolation.level": isolation, "session.timeout.ms": 6000,
               "heartbeat.interval.ms": 500, "fetch.max.wait.ms": 100}
        cfg.update(self.extra)
        return Consumer(cfg)

    def assign(self, c, keys):
        c.assign([(*split_key(k), -2) for k in keys])          # -2: the earliest offset

    def subscribe(self, c, topics, on_assign):
        c.subscribe(topics, on_assign=lambda _c, parts: on_assign(
            [key_of(tp.topic, tp.partition) for tp in parts]))

    def poll(self, c, timeout):
        return [(key_of(r.topic, r.partition), r.offset, int(r.value))
                for r in c.poll(timeout)]

    def commit_offsets(self, c):
        c.commit()

    def end_offsets(self, c, keys):
        ends = c.end_offsets([split_key(k) for k in keys])
        return {key_of(t, p): o for (t, p), o in ends.items()}

    def positions(self, c, keys):
        return {k: c.position(*split_key(k)) for k in keys}

    def close_consumer(self, c):
        c.close()
