"""The runner's own small workload over confluent-kafka (librdkafka), recording a history:
sends of unique values, assign-mode polls, transactions, and the final read.

    w = QueueWorkload(bootstrap, keys, history, acks="all")      # or TxnWorkload(...)
    w.client(i, stop)          # one client's loop: on a thread in that client's namespace
    w.final_read(keys)         # after the heal: everything, from the beginning

Errors are classified as Jepsen does: only errors that mean "not written" fail an op
(NOT_ENOUGH_REPLICAS is checked before the append, UNKNOWN_TOPIC_OR_PART, authorization,
an abort that went through); timeouts, NOT_LEADER_OR_FOLLOWER,
NOT_ENOUGH_REPLICAS_AFTER_APPEND and lost connections are info (maybe written).
"""
from __future__ import annotations

import itertools
import random
import threading
import time

from .history import History, Recorder
from .history.op import poll as poll_mop
from .history.op import send as send_mop
from .history.op import split_key

SEND_WAIT_S = 10.0              # a send not answered by then is info (Jepsen's 10 s)
DEFINITE = {"NOT_ENOUGH_REPLICAS", "UNKNOWN_TOPIC_OR_PART", "TOPIC_AUTHORIZATION_FAILED",
            "INVALID_TOPIC_EXCEPTION", "CLUSTER_AUTHORIZATION_FAILED",
            "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"}


def _name(err) -> str:
    try:
        return err.name()
    except Exception:
        return str(err)


class _Values:
    """Unique values per key, across every client."""

    def __init__(self):
        self._next = itertools.count(1)

    def next(self) -> int:
        return next(self._next)


class QueueWorkload:
    transactional = False

    def __init__(self, bootstrap: str, keys: list[str], history: History, *, seed: int = 0,
                 acks: str = "all", extra: dict | None = None, poll_share: float = 0.3):
        self.bootstrap = bootstrap
        self.keys = keys
        self.history = history
        self.seed = seed
        self.acks = acks
        self.extra = dict(extra or {})
        self.poll_share = poll_share
        self.values = _Values()

    # -- clients ---------------------------------------------------------------------------

    def producer_config(self, i: int) -> dict:
        cfg = {"bootstrap.servers": self.bootstrap, "acks": self.acks, "linger.ms": 2,
               "enable.idempotence": self.acks == "all", "request.timeout.ms": 3000,
               "message.timeout.ms": int(SEND_WAIT_S * 1000), "socket.timeout.ms": 3000,
               "retry.backoff.ms": 100, "metadata.max.age.ms": 5000,
               "topic.metadata.refresh.interval.ms": 2000, "log_level": 3}
        if self.acks != "all":
            cfg["retries"] = 0            # no retries: what acks=1 acknowledged is all it wrote
        cfg.update(self.extra)
        return cfg

    def consumer_config(self, i: int, isolation: str = "read_uncommitted") -> dict:
        cfg = {"bootstrap.servers": self.bootstrap, "group.id": f"jepsen-{i}",
               "enable.auto.commit": False, "auto.offset.reset": "earliest",
               "isolation.level": isolation, "socket.timeout.ms": 3000,
               "session.timeout.ms": 10000, "fetch.wait.max.ms": 200,
               "metadata.max.age.ms": 5000, "topic.metadata.refresh.interval.ms": 2000,
               "log_level": 3}
        cfg.update(self.extra)
        return cfg

    isolation = "read_uncommitted"

    def client(self, i: int, stop: threading.Event) -> None:
        """One client: sends and polls at random until stop is set."""
        import confluent_kafka as ck
        rng = random.Random(self.seed * 1000 + i)
        rec = Recorder(self.history)
        producer = self.new_producer(ck, i)
        consumer = self.new_consumer(ck, i, rec)
        try:
            while not stop.is_set():
                if rng.random() < self.poll_share:
                    if not self.poll(ck, consumer, rec):
                        consumer.close()
                        rec.new_process()
                        consumer = self.new_consumer(ck, i, rec)
                else:
                    producer = self.write(ck, producer, rec, rng, i)
        finally:
            consumer.close()
            producer.flush(1)

    def new_producer(self, ck, i: int):
        return ck.Producer(self.producer_config(i))

    def new_consumer(self, ck, i: int, rec: Recorder):
        c = ck.Consumer(self.consumer_config(i, self.isolation))
        tps = [ck.TopicPartition(*split_key(k), ck.OFFSET_BEGINNING) for k in self.keys]
        with rec.op("assign", list(self.keys)):
            c.assign(tps)
        return c

    def write(self, ck, producer, rec: Recorder, rng: random.Random, i: int):
        k = rng.choice(self.keys)
        v = self.values.next()
        topic, partition = split_key(k)
        box: dict = {}
        done = threading.Event()

        def delivered(err, msg):
            box["err"], box["offset"] = err, (msg.offset() if err is None else None)
            done.set()
        with rec.op("send", [send_mop(k, v)]) as op:
            producer.produce(topic, str(v).encode(), partition=partition, on_delivery=delivered)
            deadline = time.monotonic() + SEND_WAIT_S + 2
            while not done.is_set() and time.monotonic() < deadline:
                producer.poll(0.05)
            if not done.is_set():
                op.info("timeout")
            elif box["err"] is not None:
                name = _name(box["err"])
                (op.fail if name in DEFINITE else op.info)(name)
            else:
                op.ok([send_mop(k, v, box["offset"])])
        return producer

    def poll(self, ck, consumer, rec: Recorder) -> bool:
        """One poll op; False when the consumer should be replaced."""
        with rec.op("poll", [poll_mop()]) as op:
            got: dict[str, list] = {}
            for m in consumer.consume(200, 0.5):
                if m.error() is not None:
                    if m.error().code() == ck.KafkaError._PARTITION_EOF:
                        continue
                    op.info(_name(m.error()), [poll_mop(got)])
                    return False
                got.setdefault(f"{m.topic()}/{m.partition()}", []).append(
                    (m.offset(), int(m.value())))
            op.ok([poll_mop(got)])
        return True

    # -- final read ------------------------------------------------------------------------

    def final_read(self, timeout: float) -> dict[str, int]:
        """Read every key from the beginning up to its high watermark; returns the ends."""
        import confluent_kafka as ck
        rec = Recorder(self.history)
        c = ck.Consumer({**self.consumer_config(999, self.isolation), "group.id": "final"})
        deadline = time.monotonic() + timeout
        ends: dict[str, int] = {}
        try:
            for k in self.keys:
                topic, partition = split_key(k)
                while True:
                    try:
                        lo, hi = c.get_watermark_offsets(ck.TopicPartition(topic, partition),
                                                         timeout=5)
                        ends[k] = hi
                        break
                    except ck.KafkaException:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.5)
            with rec.op("assign", list(self.keys), final=True):
                c.assign([ck.TopicPartition(*split_key(k), ck.OFFSET_BEGINNING)
                          for k in self.keys])
            position = {k: -1 for k in self.keys}
            while time.monotonic() < deadline and any(
                    position[k] + 1 < self.last_visible(ends[k]) for k in self.keys):
                with rec.op("poll", [poll_mop()], final=True) as op:
                    got: dict[str, list] = {}
                    for m in c.consume(500, 1.0):
                        if m.error() is not None:
                            continue
                        k = f"{m.topic()}/{m.partition()}"
                        got.setdefault(k, []).append((m.offset(), int(m.value())))
                        position[k] = max(position[k], m.offset())
                    op.ok([poll_mop(got)])
                self.advance(c, ck, position, ends)
        finally:
            c.close()
        return ends

    def last_visible(self, end: int) -> int:
        return end

    def advance(self, c, ck, position, ends) -> None:
        """Count a key done when the consumer's position reached its end (markers and
        aborted records take offsets a read_committed consumer never returns)."""
        try:
            for tp in c.position([ck.TopicPartition(*split_key(k)) for k in self.keys]):
                k = f"{tp.topic}/{tp.partition}"
                if tp.offset >= 0:
                    position[k] = max(position[k], tp.offset - 1)
        except ck.KafkaException:
            pass


class TxnWorkload(QueueWorkload):
    """Transactions of 1-4 sends over the keys (about one in ten aborted on purpose), read
    by read_committed consumers."""
    transactional = True
    isolation = "read_committed"

    def new_producer(self, ck, i: int):
        cfg = self.producer_config(i)
        cfg.update({"transactional.id": f"jepsen-txn-{i}", "transaction.timeout.ms": 20000,
                    "enable.idempotence": True, "acks": "all"})
        cfg.pop("retries", None)
        p = ck.Producer(cfg)
        deadline = time.monotonic() + 120
        while True:
            try:
                p.init_transactions(10)
                return p
            except ck.KafkaException as e:
                if e.args[0].fatal() or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def write(self, ck, producer, rec: Recorder, rng: random.Random, i: int):
        n = rng.randint(1, 4)
        mops = [send_mop(rng.choice(self.keys), self.values.next()) for _ in range(n)]
        abort = rng.random() < 0.1
        offsets: dict[int, int] = {}
        learned = []

        def delivered(err, msg):
            if err is None:
                offsets[int(msg.value())] = msg.offset()
        with rec.op("txn", mops) as op:
            try:
                producer.begin_transaction()
                for _, k, v in mops:
                    topic, partition = split_key(k)
                    producer.produce(topic, str(v).encode(), partition=partition,
                                     on_delivery=delivered)
                left = producer.flush(SEND_WAIT_S)
                learned = [send_mop(k, v, offsets.get(v), acked=True) for _, k, v in mops]
                if left or abort:
                    producer.abort_transaction(SEND_WAIT_S)
                    op.fail("aborted" if abort else "unflushed", learned, aborted=abort)
                    return producer
                producer.commit_transaction(SEND_WAIT_S)
                op.ok(learned)
                return producer
            except ck.KafkaException as e:
                err = e.args[0]
                name = _name(err)
                if err.txn_requires_abort():
                    try:
                        producer.abort_transaction(SEND_WAIT_S)
                        op.fail(name, learned or None)
                        return producer
                    except ck.KafkaException as e2:
                        name = f"{name}; abort: {_name(e2.args[0])}"
                op.info(name, learned or None)
                # the outcome is unknown and the producer's state with it: a new one (a new
                # process in the history), which fences the old one by its transactional.id
                rec.new_process()
                return self.new_producer(ck, i)
