"""Consumers and producers kept across the Spark tasks of one Python worker.

Spark runs the tasks of a Python data source in Python worker processes that it reuses from
task to task (spark.python.worker.reuse, on by default). Opening a gregor client costs
connections, an ApiVersions exchange and metadata (and for an idempotent producer an
InitProducerId) before the first record moves; closing one waits for its I/O thread. For a
micro-batch of a few thousand rows that is most of a task's time. Spark's own Kafka connector
pools its clients on each executor for the same reason (InternalKafkaConsumerPool,
InternalKafkaProducerPool); this is gregor's equivalent for a Python worker:

- a client is borrowed by one task at a time (a Python worker runs one task at a time) and
  given back when the task succeeded; a task that fails closes its client instead, so no
  state of a failed read or write reaches the next task;
- clients are keyed by their full configuration: tasks of queries with different options
  never share one;
- bounded: at most `capacity` idle clients per kind (the least recently used is closed first),
  and a client idle for `idle_timeout_s` is closed by a background thread (Spark's defaults:
  spark.kafka.consumer.cache.capacity 64 and timeout 5 minutes; producer timeout 10
  minutes); everything left is closed when the worker exits.

Transactional producers (deliveryGuarantee=exactly-once) are never pooled: each task's
InitProducerId is what fences an earlier attempt of the same task.
"""
from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections import OrderedDict
from typing import Callable, Hashable

log = logging.getLogger("gregor.spark")

CONSUMER_CAPACITY = 64
CONSUMER_IDLE_TIMEOUT_S = 5 * 60
PRODUCER_CAPACITY = 16
PRODUCER_IDLE_TIMEOUT_S = 10 * 60
EVICTOR_INTERVAL_S = 60


def config_key(config: dict) -> Hashable:
    """A hashable identity of a client configuration (values as strings: options arrive as
    strings from Spark, and equal settings must share a key)."""
    return tuple(sorted((str(k), str(v)) for k, v in config.items()))


class ClientPool:
    """Idle clients of one kind by configuration key, most recently used last."""

    def __init__(self, kind: str, capacity: int, idle_timeout_s: float,
                 close: Callable[[object], None], clock: Callable[[], float] = time.monotonic):
        self.kind = kind
        self.capacity = capacity
        self.idle_timeout_s = idle_timeout_s
        self._close = close
        self._clock = clock
        self._lock = threading.Lock()
        # (key, id) -> (client, idle since); one key may hold several idle clients
        self._idle: OrderedDict[tuple, tuple[object, float]] = OrderedDict()
        self.created = 0
        self.reused = 0

    def borrow(self, key: Hashable, create: Callable[[], object]):
        with self._lock:
            for slot in reversed(self._idle):
                if slot[0] == key:
                    client, _ = self._idle.pop(slot)
                    self.reused += 1
                    return client
            self.created += 1
        return create()

    def give_back(self, key: Hashable, client) -> None:
        """A healthy client becomes idle (the least recently used idle one closes when the
        pool is full)."""
        evicted = []
        with self._lock:
            self._idle[(key, id(client))] = (client, self._clock())
            while len(self._idle) > self.capacity:
                _, (old, _) = self._idle.popitem(last=False)
                evicted.append(old)
        for old in evicted:
            self._close_quietly(old)

    def discard(self, client) -> None:
        """A client whose task failed: closed, never reused."""
        self._close_quietly(client)

    def evict_idle(self) -> int:
        """Close clients idle longer than the timeout; returns how many."""
        now = self._clock()
        stale = []
        with self._lock:
            for slot, (client, since) in list(self._idle.items()):
                if now - since >= self.idle_timeout_s:
                    del self._idle[slot]
                    stale.append(client)
        for client in stale:
            self._close_quietly(client)
        return len(stale)

    def close_all(self) -> None:
        with self._lock:
            clients = [c for c, _ in self._idle.values()]
            self._idle.clear()
        for client in clients:
            self._close_quietly(client)

    def idle_count(self) -> int:
        with self._lock:
            return len(self._idle)

    def _close_quietly(self, client) -> None:
        try:
            self._close(client)
        except Exception as e:  # closing is best effort: the client is gone either way
            log.debug("gregor spark pool: closing a %s failed: %s", self.kind, e)


def _close_consumer(c) -> None:
    c.close()


def _close_producer(p) -> None:
    p.close(5.0)


_pools: dict[str, ClientPool] = {}
_owner_pid: int | None = None
_evictor: threading.Thread | None = None
_guard = threading.Lock()


def _pools_of_this_process() -> dict[str, ClientPool]:
    """The pools, created on first use in each process (a forked worker starts empty: sockets
    of a parent process must not be shared)."""
    global _owner_pid, _evictor
    with _guard:
        if _owner_pid != os.getpid():
            _owner_pid = os.getpid()
            _pools.clear()
            _pools["consumer"] = ClientPool("consumer", CONSUMER_CAPACITY, CONSUMER_IDLE_TIMEOUT_S,
                                            _close_consumer)
            _pools["producer"] = ClientPool("producer", PRODUCER_CAPACITY, PRODUCER_IDLE_TIMEOUT_S,
                                            _close_producer)
            _evictor = threading.Thread(target=_evict_forever, name="gregor-spark-pool-evictor",
                                        daemon=True)
            _evictor.start()
            atexit.register(close_all)
        return _pools


def _evict_forever() -> None:
    while True:
        time.sleep(EVICTOR_INTERVAL_S)
        for pool in list(_pools.values()):
            pool.evict_idle()


def consumers() -> ClientPool:
    return _pools_of_this_process()["consumer"]


def producers() -> ClientPool:
    return _pools_of_this_process()["producer"]


def close_all() -> None:
    for pool in list(_pools.values()):
        pool.close_all()
