"""kafka-go-shaped Writer over the one producer engine.

    w = Writer(bootstrap_servers="127.0.0.1:9092", topic="events")
    w.write_messages(Message(key=b"k", value=b"v"), Message(value=b"w"))
    # raises WriteErrors (one slot per message: None or the exception) when any failed

Settings keep kafka-go's names and defaults: balancer (round robin), batch_size (100
messages), batch_bytes (1 MiB), batch_timeout (1 s), max_attempts (10), required_acks
(RequireNone = 0), async_ (False), completion (called with (messages, error) after an async
write). A synchronous write_messages() sends its batch at once instead of waiting out
batch_timeout; batch_timeout applies to async writes (it is the engine's linger), which are
also sent as soon as batch_size messages have been written (counted over the Writer, where
kafka-go counts per partition).

kafka-go's Writer has no transactions, and neither has this one: a `transactional.id` is
refused. Use Producer (or the sarama facades) for transactional writes.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import ConfigError
from .facade import EngineFacade, ErrorList
from .producer import Producer

RequireNone, RequireOne, RequireAll = 0, 1, -1

_BALANCERS = {"round_robin": "kafka_go.round_robin", "roundrobin": "kafka_go.round_robin",
              "least_bytes": "kafka_go.least_bytes", "leastbytes": "kafka_go.least_bytes",
              "hash": "kafka_go.hash", "crc32": "kafka_go.crc32",
              "murmur2": "kafka_go.murmur2"}


@dataclass
class Message:
    topic: str | None = None
    key: Any = None
    value: Any = None
    headers: list | None = None
    time: int | None = None          # ms since the epoch; None means now
    partition: int = -1              # filled in after a successful write
    offset: int = -1                 # filled in after a successful write (acks >= 1)


class WriteErrors(ErrorList):
    """One slot per message given to write_messages: None if it was written, else its error.
    Indexes and iterates like a list."""

    @property
    def count(self) -> int:
        return sum(1 for e in self.errors if e is not None)

    def __str__(self):
        first = next((e for e in self.errors if e is not None), None)
        return f"kafka write errors ({self.count}/{len(self)}); first: {first}"


@dataclass
class WriterStats:
    writes: int = 0
    messages: int = 0
    bytes: int = 0
    errors: int = 0
    retries: int = 0
    batch_bytes_avg: float = 0.0
    request_latency_avg_ms: float = 0.0
    topic: str | None = None
    extra: dict = field(default_factory=dict)


class Writer(EngineFacade):
    def __init__(self, bootstrap_servers: str | list | None = None, topic: str | None = None,
                 balancer: str | Callable | None = None, batch_size: int = 100,
                 batch_bytes: int = 1024 * 1024, batch_timeout: float = 1.0,
                 max_attempts: int = 10, required_acks: int = RequireNone,
                 async_: bool = False, completion: Callable | None = None,
                 compression: str | None = None, config: dict | None = None, **kwargs):
        conf = dict(config or {})
        if bootstrap_servers is not None:
            conf["bootstrap.servers"] = bootstrap_servers
        if isinstance(balancer, str):
            balancer = _BALANCERS.get(balancer.lower().replace("-", "_"), balancer)
        conf.setdefault("partitioner.class", balancer or "kafka_go.round_robin")
        conf.setdefault("batch.size", batch_bytes)
        conf.setdefault("linger.ms", batch_timeout * 1000.0)
        conf.setdefault("retries", max(0, max_attempts - 1))
        conf.setdefault("acks", required_acks)
        if compression:
            conf.setdefault("compression.type", compression)
        if any(k.replace("_", ".") == "transactional.id" and v is not None
               for k, v in {**conf, **kwargs}.items()):
            raise ConfigError("kafka-go's Writer has no transactions: use gregor.Producer or "
                              "the sarama-style SyncProducer for a transactional.id")
        self.topic = topic
        # kafka-go sends a batch once it holds batch_size messages; here every batch_size
        # messages of async writes (counted over the Writer, not per partition) make the
        # engine send what it has queued instead of waiting out batch_timeout.
        self.batch_size = max(1, batch_size)
        self._unsent = 0
        self.async_ = async_
        self.completion = completion
        self._engine = Producer(conf, **kwargs)
        self._lock = threading.Lock()
        self._stats = WriterStats(topic=topic)

    def _topic_of(self, m: Message) -> str:
        if m.topic and self.topic:
            raise ValueError("a Message may not set topic when the Writer has one "
                             f"(writer topic {self.topic!r}, message topic {m.topic!r})")
        t = m.topic or self.topic
        if not t:
            raise ValueError("no topic: set Writer(topic=...) or Message.topic")
        return t

    def write_messages(self, *messages: Message, timeout: float | None = None) -> None:
        if len(messages) == 1 and isinstance(messages[0], (list, tuple)):
            messages = tuple(messages[0])
        futs: list = []
        errors: list = [None] * len(messages)
        size = 0
        for i, m in enumerate(messages):
            try:
                futs.append(self._engine.send(self._topic_of(m), m.value, m.key, m.headers,
                                              None, m.time))
                size += (len(m.value) if m.value is not None else 0) + \
                        (len(m.key) if m.key is not None else 0)
            except Exception as e:
                futs.append(None)
                errors[i] = e
        with self._lock:
            self._stats.writes += 1
            self._stats.messages += len(messages)
            self._stats.bytes += size
        if self.async_:
            self._on_all_done(messages, futs, errors)
            with self._lock:
                self._unsent += len(messages)
                full = self._unsent >= self.batch_size
                if full:
                    self._unsent = 0
            if full:
                self._engine.send_open_batches()
            return
        self._engine.flush(timeout)
        self._collect(messages, futs, errors, timeout)
        if any(e is not None for e in errors):
            raise WriteErrors(errors)

    def _collect(self, messages, futs, errors, timeout):
        failed = 0
        for i, (m, f) in enumerate(zip(messages, futs)):
            if f is None:
                failed += 1
                continue
            try:
                md = f.result(timeout)
                m.partition, m.offset = md.partition, md.offset
            except Exception as e:
                errors[i] = e
                failed += 1
        with self._lock:
            self._stats.errors += failed

    def _on_all_done(self, messages, futs, errors):
        live = [f for f in futs if f is not None]
        pending = [len(live)]
        lock = threading.Lock()

        def one_done(_):
            with lock:
                pending[0] -= 1
                last = pending[0] == 0
            if last:
                self._collect(messages, futs, errors, 0)
                if self.completion is not None:
                    err = WriteErrors(errors) if any(e is not None for e in errors) else None
                    self.completion(list(messages), err)
        if not live:
            if self.completion is not None:
                self.completion(list(messages), WriteErrors(errors))
            return
        for f in live:
            f.add_done_callback(one_done)

    def stats(self) -> WriterStats:
        m = self._engine.metrics()
        with self._lock:
            s = WriterStats(**{k: getattr(self._stats, k) for k in
                               ("writes", "messages", "bytes", "errors", "topic")})
        s.retries = int(m["record-retry-total"])
        s.batch_bytes_avg = m["batch-size-avg"]
        s.request_latency_avg_ms = m["request-latency-avg"]
        s.extra = m
        return s
