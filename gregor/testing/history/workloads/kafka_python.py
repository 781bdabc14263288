"""kafka-python under the shared workload shape.

Errors: kafka.errors' classes carry Kafka's name as `message` for broker errors
(NOT_ENOUGH_REPLICAS...); client-side ones (KafkaTimeoutError, NoBrokersAvailable, a
closed connection) are info. Extra settings are kafka-python's keyword names (dots allowed:
"security.protocol" is security_protocol).
"""
from __future__ import annotations

from gregor.testing.history.op import key as key_of
from gregor.testing.history.op import split_key
from gregor.testing.history.workloads.errors import classify_name
from gregor.testing.history.workloads.shape import Client


def _kwargs(extra: dict) -> dict:
    return {k.replace(".", "_"): v for k, v in extra.items()}


class KafkaPythonClient(Client):
    name = "kafka-python"

    def __init__(self, bootstrap, extra):
        super().__init__(bootstrap, extra)
        import kafka
        import kafka.errors
        self.kafka, self.errors = kafka, kafka.errors

    def error_name(self, exc) -> str:
        if isinstance(exc, self.errors.BrokerResponseError):
            return type(exc).message
        return type(exc).__name__

    def classify(self, exc):
        if isinstance(exc, (self.errors.KafkaError, TimeoutError, OSError)):
            return classify_name(self.error_name(exc))
        return None

    def producer(self, *, acks, transactional_id=None):
        cfg = {"bootstrap_servers": self.bootstrap, "acks": "all" if acks == "all" else int(acks),
               "enable_idempotence": acks == "all", "linger_ms": 1, "request_timeout_ms": 3000,
               "retry_backoff_ms": 100}
        if transactional_id:
            cfg.update({"transactional_id": transactional_id, "transaction_timeout_ms": 30000})
        cfg.update(_kwargs(self.extra))
        p = self.kafka.KafkaProducer(**cfg)
        if transactional_id:
            p.init_transactions()
        return p

    def produce(self, p, records, timeout):
        futures = [p.send(topic, str(value).encode(), partition=partition)
                   for topic, partition, value in records]
        out = []
        for f in futures:
            try:
                out.append((f.get(timeout=timeout).offset, None))
            except Exception as e:
                out.append((None, e))
        return out

    def begin(self, p):
        p.begin_transaction()

    def commit(self, p, timeout):
        p.commit_transaction()

    def abort(self, p, timeout):
        p.abort_transaction()

    def close_producer(self, p):
        p.close(timeout=1)

    def consumer(self, group, isolation):
        cfg = {"bootstrap_servers": self.bootstrap, "group_id": group,
               "enable_auto_commit": False, "auto_offset_reset": "earliest",
               "isolation_level": isolation, "request_timeout_ms": 5000,
               "session_timeout_ms": 6000, "heartbeat_interval_ms": 500,
               "fetch_max_wait_ms": 100}
        cfg.update(_kwargs(self.extra))
        return self.kafka.KafkaConsumer(**cfg)

    def _tps(self, keys):
        return [self.kafka.TopicPartition(*split_key(k)) for k in keys]

    def assign(self, c, keys):
        tps = self._tps(keys)
        c.assign(tps)
        c.seek_to_beginning(*tps)

    def subscribe(self, c, topics, on_assign):
        base = self.kafka.ConsumerRebalanceListener

        class Listener(base):
            def on_partitions_revoked(self, revoked):
                pass

            def on_partitions_assigned(self, assigned):
                on_assign([key_of(tp.topic, tp.partition) for tp in assigned])
        c.subscribe(topics, listener=Listener())

    def poll(self, c, timeout):
        got = c.poll(timeout_ms=int(timeout * 1000), max_records=500)
        return [(key_of(tp.topic, tp.partition), r.offset, int(r.value))
                for tp, rs in got.items() for r in rs]

    def commit_offsets(self, c):
        c.commit()

    def end_offsets(self, c, keys):
        ends = c.end_offsets(self._tps(keys))
        return {key_of(tp.topic, tp.partition): o for tp, o in ends.items()}

    def positions(self, c, keys):
        return {k: c.position(tp) for k, tp in zip(keys, self._tps(keys))}

    def close_consumer(self, c):
        c.close(autocommit=False)
