"""aiokafka under the shared workload shape: each client thread runs its own event loop and
drives aiokafka's coroutines on it, so the shape stays one (synchronous) loop of ops.

Errors: aiokafka.errors' broker errors carry Kafka's name as `message`; timeouts and
connection errors are info. Extra settings are aiokafka's keyword names (dots allowed).
"""
from __future__ import annotations

import asyncio

from gregor.testing.history.op import key as key_of
from gregor.testing.history.op import split_key
from gregor.testing.history.workloads.errors import classify_name
from gregor.testing.history.workloads.shape import Client


def _kwargs(extra: dict) -> dict:
    return {k.replace(".", "_"): v for k, v in extra.items()}


class AiokafkaClient(Client):
    name = "aiokafka"

    def __init__(self, bootstrap, extra):
        super().__init__(bootstrap, extra)
        import aiokafka
        import aiokafka.errors
        self.aiokafka, self.errors = aiokafka, aiokafka.errors
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)      # aiokafka looks the loop up in sync calls too

    def _run(self, coro, timeout=None):
        if timeout is not None:
            coro = asyncio.wait_for(coro, timeout)
        return self.loop.run_until_complete(coro)

    def error_name(self, exc) -> str:
        if isinstance(exc, self.errors.BrokerResponseError):
            return type(exc).message
        return type(exc).__name__

    def classify(self, exc):
        if isinstance(exc, (self.errors.KafkaError, TimeoutError, OSError,
                            asyncio.TimeoutError)):
            return classify_name(self.error_name(exc))
        return None

    def producer(self, *, acks, transactional_id=None):
        cfg = {"bootstrap_servers": self.bootstrap, "acks": "all" if acks == "all" else int(acks),
               "enable_idempotence": acks == "all", "linger_ms": 1, "request_timeout_ms": 3000,
               "retry_backoff_ms": 100, "value_serializer": lambda v: str(v).encode()}
        if transactional_id:
            cfg.update({"transactional_id": transactional_id, "transaction_timeout_ms": 30000})
        cfg.update(_kwargs(self.extra))

        async def start():
            p = self.aiokafka.AIOKafkaProducer(**cfg)
            try:
                await p.start()
            except BaseException:
                await p.stop()
                raise
            return p
        return self._run(start())

    def produce(self, p, records, timeout):
        async def go():
            futures = [await p.send(topic, value, partition=partition)
                       for topic, partition, value in records]
            out = []
            for f in futures:
                try:
                    out.append(((await asyncio.wait_for(f, timeout)).offset, None))
                except Exception as e:
                    out.append((None, e))
            return out
        return self._run(go())

    def begin(self, p):
        self._run(p.begin_transaction())

    def commit(self, p, timeout):
        self._run(p.commit_transaction(), timeout)

    def abort(self, p, timeout):
        self._run(p.abort_transaction(), timeout)

    def close_producer(self, p):
        self._run(p.stop(), 5)

    def consumer(self, group, isolation):
        cfg = {"bootstrap_servers": self.bootstrap, "group_id": group,
               "enable_auto_commit": False, "auto_offset_reset": "earliest",
               "isolation_level": isolation, "request_timeout_ms": 5000,
               "session_timeout_ms": 6000, "heartbeat_interval_ms": 500,
               "fetch_max_wait_ms": 100, "value_deserializer": lambda b: int(b)}
        cfg.update(_kwargs(self.extra))

        async def start():
            c = self.aiokafka.AIOKafkaConsumer(**cfg)
            await c.start()
            return c
        return self._run(start())

    def _tps(self, keys):
        return [self.aiokafka.TopicPartition(*split_key(k)) for k in keys]

    def assign(self, c, keys):
        tps = self._tps(keys)

        async def go():
            c.assign(tps)
            await c.seek_to_beginning(*tps)
        self._run(go())

    def subscribe(self, c, topics, on_assign):
        base = self.aiokafka.ConsumerRebalanceListener

        class Listener(base):
            async def on_partitions_revoked(self, revoked):
                pass

            async def on_partitions_assigned(self, assigned):
                on_assign([key_of(tp.topic, tp.partition) for tp in assigned])

        async def go():
            c.subscribe(topics, listener=Listener())
        self._run(go())

    def poll(self, c, timeout):
        got = self._run(c.getmany(timeout_ms=int(timeout * 1000), max_records=500))
        return [(key_of(tp.topic, tp.partition), r.offset, r.value)
                for tp, rs in got.items() for r in rs]

    def commit_offsets(self, c):
        self._run(c.commit(), 10)

    def end_offsets(self, c, keys):
        ends = self._run(c.end_offsets(self._tps(keys)), 10)
        return {key_of(tp.topic, tp.partition): o for tp, o in ends.items()}

    def positions(self, c, keys):
        return {k: self._run(c.position(tp), 10) for k, tp in zip(keys, self._tps(keys))}

    def close_consumer(self, c):
        self._run(c.stop(), 10)

    def close(self):
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()
        asyncio.set_event_loop(None)
