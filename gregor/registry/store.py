"""The `_schemas` topic: the registry's only state, read to its end and written to.

Every instance reads partition 0 from the beginning, without a group and without commits
(assign mode), and applies each record to a `RegistryState`. A write sends the records with
acks=all and returns once the reader has applied them (read-your-writes). `start()` creates
the topic when it is missing (1 partition, cleanup.policy=compact) and refuses to go on when
it exists with anything else, as a registry on a deleting or multi-partition topic would lose
schemas or their order.
"""
from __future__ import annotations

import logging
import threading
import time

from ..client.admin import AdminClient, NewTopic
from ..client.consumer import Consumer
from ..client.producer import Producer
from . import errors
from .records import noop_record
from .state import RegistryState

log = logging.getLogger(__name__)

TOPIC = "_schemas"
# How long a write waits for its records to be acknowledged and read back (Confluent's
# kafkastore.timeout.ms default): past it the client gets 50002 and may retry.
WRITE_TIMEOUT_S = 30.0


class StoreConfigError(RuntimeError):
    """The `_schemas` topic exists with settings the registry cannot run on."""


def _clean(config: dict) -> dict:
    # the registry's clients take the cluster's connection settings, nothing else
    return {k: v for k, v in config.items() if v is not None}


class KafkaStore:
    def __init__(self, client_config: dict, *, topic: str = TOPIC,
                 replication_factor: int | None = None, write_timeout_s: float = WRITE_TIMEOUT_S):
        self.config = _clean(client_config)
        self.topic = topic
        self.replication_factor = replication_factor
        self.write_timeout_s = write_timeout_s
        self.state = RegistryState()
        # the reader applies records under this condition; writers wait on it for read-back
        self.cond = threading.Condition(threading.RLock())
        self._stop = threading.Event()
        self._reader: threading.Thread | None = None
        self._consumer = None
        self._producer = None
        self.reader_error: BaseException | None = None

    # -- lifecycle --------------------------------------------------------------------------
    def start(self, timeout_s: float = 60.0) -> None:
        self._ensure_topic(timeout_s)
        # max.poll.records: a restart replays the whole topic; fewer, larger polls
        self._consumer = Consumer({**self.config, "client.id": "gregor-schema-registry-reader",
                                   "max.poll.records": 10_000,
                                   "enable.auto.commit": False})
        self._consumer.assign([(self.topic, 0, -2)])
        end = self._consumer.end_offsets([(self.topic, 0)], timeout=timeout_s)
        end_offset = next(iter(end.values()))
        self._producer = Producer({**self.config, "client.id": "gregor-schema-registry-writer",
                                   "acks": "all", "linger.ms": 0, "enable.idempotence": True})
        self._reader = threading.Thread(target=self._read_loop, name="schema-registry-reader",
                                        daemon=True)
        self._reader.start()
        self.wait_for_offset(end_offset - 1, timeout_s)

    def _ensure_topic(self, timeout_s: float) -> None:
        with AdminClient({**self.config, "client.id": "gregor-schema-registry-admin"}) as admin:
            topics = admin.list_topics(timeout=timeout_s)
            described = topics.get(self.topic)
            if described is None:
                brokers = len(admin.describe_cluster(timeout=timeout_s).brokers)
                rf = self.replication_factor or min(3, max(brokers, 1))
                try:
                    admin.create_topics([NewTopic(self.topic, num_partitions=1,
                                                  replication_factor=rf,
                                                  config={"cleanup.policy": "compact"})],
                                        timeout=timeout_s, ignore_existing=True)
                except Exception as e:
                    raise StoreConfigError(f"could not create the {self.topic} topic: {e}") \
                        from e
                log.info("created %s (1 partition, compacted, replication factor %d)",
                         self.topic, rf)
                self._wait_for_topic(admin, timeout_s)
                described = admin.list_topics(timeout=timeout_s).get(self.topic)
            n = len(described.partitions) if described is not None else 0
            if n != 1:
                raise StoreConfigError(
                    f"the {self.topic} topic has {n} partitions; the schema registry needs "
                    "exactly 1 (one total order of schema writes). Delete it or point the "
                    "registry at another cluster.")
            entries = admin.describe_configs([self.topic], timeout=timeout_s).get(self.topic, {})
            policy = getattr(entries.get("cleanup.policy"), "value", None) or "delete"
            if policy != "compact":
                raise StoreConfigError(
                    f"the {self.topic} topic has cleanup.policy={policy}; the schema registry "
                    f"needs cleanup.policy=compact (with deletion, old schemas would expire). "
                    f"Fix it with: gregor topics alter {self.topic} --config "
                    "cleanup.policy=compact")

    def _wait_for_topic(self, admin, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            t = admin.list_topics(timeout=timeout_s).get(self.topic)
            if t is not None and t.partitions and all(p.leader is not None and p.leader >= 0
                                                      for p in t.partitions):
                return
            time.sleep(0.05)

    def close(self) -> None:
        self._stop.set()
        if self._consumer is not None:
            try:
                self._consumer.wakeup()
            except Exception:
                pass
        if self._reader is not None:
            self._reader.join(timeout=10)
        for c in (self._producer, self._consumer):
            if c is not None:
                try:
                    c.close()
                except Exception:
                    log.debug("closing a registry client", exc_info=True)

    # -- reading ----------------------------------------------------------------------------
    def _read_loop(self) -> None:
        while not self._stop.is_set():
            try:
                batch = self._consumer.poll(timeout=0.5)
            except Exception as e:
                if self._stop.is_set():
                    return
                log.warning("reading %s: %s", self.topic, e)
                time.sleep(0.2)
                continue
            if not batch:
                continue
            with self.cond:
                for rec in batch:
                    self.state.apply(rec.key, rec.value, rec.offset)
                self.cond.notify_all()

    def wait_for_offset(self, offset: int, timeout_s: float) -> None:
        with self.cond:
            if not self.cond.wait_for(lambda: self.state.offset >= offset, timeout=timeout_s):
                raise errors.operation_timeout(
                    f"the registry had not read {self.topic} up to offset {offset} after "
                    f"{timeout_s:g} s (it is at {self.state.offset})")

    # -- writing ----------------------------------------------------------------------------
    def write(self, records: list[tuple[bytes, bytes | None]]) -> int:
        """Send `records` in order; return the last offset once it has been read back."""
        futures = [self._producer.send(self.topic, value=v, key=k, partition=0)
                   for k, v in records]
        try:
            last = max(f.result(timeout=self.write_timeout_s).offset for f in futures)
        except errors.RegistryError:
            raise
        except Exception as e:
            raise errors.store_error(f"writing to {self.topic} failed: {e}") from e
        self.wait_for_offset(last, self.write_timeout_s)
        return last

    def sync(self) -> None:
        """Read everything written before now (a NOOP record marks 'now'), as a new leader
        must before it hands out ids."""
        self.write([noop_record()])
