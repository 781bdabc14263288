"""One workload shape over every client library; each library is a thin `Client` adapter.

Each client thread is one logical process (a new one after a crash), doing one op at a time:
- queue mode: idempotent acks=all sends of unique integers to the keys, and polls;
- txn mode: transactions of 1-4 sends (sometimes a poll too) committed or aborted at random,
  read by read_committed consumers;
- consumers in assign mode (every key from the beginning) or subscribe mode (the group picks
  the partitions; each rebalance is recorded in the op it happened in, meta "rebalance_log",
  and offsets are committed after each poll);
- `final_read()`: after the heal, a read_committed consumer reads every key from the
  beginning up to its end offset.

    w = Workload(ConfluentClient, bootstrap, keys, history, seed=1, extra={...})
    w.run(clients=2, duration=5)          # threads; or w.client(i, stop) on your own thread
    w.final_read(timeout=30)
"""
from __future__ import annotations

import random
import threading
import time
from itertools import count
from typing import Callable

from gregor.testing.history.history import History
from gregor.testing.history.op import poll as poll_mop
from gregor.testing.history.op import send as send_mop
from gregor.testing.history.op import split_key
from gregor.testing.history.recorder import Recorder
from gregor.testing.history.workloads.errors import FATAL

SEND_WAIT_S = 10.0                 # Jepsen's 10 s: a send not acknowledged by then is info

# Values are unique across every workload of this process, so several workloads (different
# client libraries) can write the same keys into one history.
_VALUES = count(1)
_VALUES_LOCK = threading.Lock()


class Client:
    """What a library must offer. Records are (topic, partition, value); reads come back as
    (key, offset, value). Errors are raised as the library raises them; `classify` maps them."""
    name = "?"

    def __init__(self, bootstrap: str, extra: dict):
        self.bootstrap, self.extra = bootstrap, dict(extra)

    def classify(self, exc: BaseException):         # -> (fail|info, name) or None
        raise NotImplementedError

    def error_name(self, exc: BaseException) -> str:
        return type(exc).__name__

    def producer(self, *, acks: str, transactional_id: str | None = None): ...
    def produce(self, p, records, timeout: float) -> list: ...   # [(offset|None, exc|None)]
    def begin(self, p) -> None: ...
    def commit(self, p, timeout: float) -> None: ...
    def abort(self, p, timeout: float) -> None: ...
    def close_producer(self, p) -> None: ...
    def consumer(self, group: str, isolation: str): ...
    def assign(self, c, keys: list[str]) -> None: ...            # from the beginning
    def subscribe(self, c, topics: list[str], on_assign: Callable[[list[str]], None]): ...
    def poll(self, c, timeout: float) -> list: ...               # [(key, offset, value)]
    def commit_offsets(self, c) -> None: ...
    def end_offsets(self, c, keys: list[str]) -> dict: ...
    def positions(self, c, keys: list[str]) -> dict: ...
    def close_consumer(self, c) -> None: ...
    def close(self) -> None: ...


class Workload:
    def __init__(self, client_class: type[Client], bootstrap: str, keys: list[str],
                 history: History, *, seed: int = 0, extra: dict | None = None,
                 transactional: bool = False, subscribe: bool = False, acks: str = "all",
                 poll_share: float = 0.3, abort_share: float = 0.25, poll_timeout: float = 0.2,
                 name: str | None = None):
        self.client_class, self.bootstrap, self.keys = client_class, bootstrap, list(keys)
        self.history, self.seed, self.extra = history, seed, dict(extra or {})
        self.transactional, self.subscribe, self.acks = transactional, subscribe, acks
        self.poll_share, self.abort_share = poll_share, abort_share
        self.poll_timeout = poll_timeout
        self.name = name or f"{client_class.name}-{seed}"
        self.isolation = "read_committed" if transactional else "read_uncommitted"
        self._pending_rebalances: dict = {}
        self.processes: set = set()         # the history processes this workload's clients ran

    @staticmethod
    def _value() -> int:
        with _VALUES_LOCK:
            return next(_VALUES)

    # --- running -----------------------------------------------------------------------
    def run(self, clients: int = 2, *, duration: float | None = None,
            ops: int | None = None) -> None:
        """Start `clients` threads; return when each stopped (after `duration` seconds or
        `ops` operations each)."""
        stop = threading.Event()
        errors: list[BaseException] = []

        def body(i):
            try:
                self.client(i, stop, duration=duration, ops=ops)
            except BaseException as e:          # surfaced below, not lost in a thread
                errors.append(e)
        threads = [threading.Thread(target=body, args=(i,), name=f"{self.name}-{i}")
                   for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]

    def client(self, i: int, stop: threading.Event | None = None, *,
               duration: float | None = None, ops: int | None = None) -> None:
        stop = stop or threading.Event()
        rng = random.Random(f"{self.seed}/{i}")
        lib = self.client_class(self.bootstrap, self.extra)
        rec = Recorder(self.history, classify=lib.classify)
        self.processes.add(rec.process)
        end = time.monotonic() + duration if duration is not None else None
        producer = consumer = None
        done = 0
        try:
            while not stop.is_set() and (end is None or time.monotonic() < end) and \
                    (ops is None or done < ops):
                done += 1                         # a failed client start counts too, so
                if consumer is None:              # ops=N ends even if the cluster never
                    consumer = self._open_consumer(lib, rec, i)     # comes back
                    if consumer is None:
                        continue
                if producer is None:
                    producer = self._open_producer(lib, rec, i)
                    if producer is None:
                        continue
                if rng.random() < self.poll_share:
                    if not self._poll(lib, rec, consumer):
                        consumer = self._crash(lib, rec, consumer=consumer)
                elif self.transactional:
                    if not self._txn(lib, rec, producer, consumer, rng):
                        producer = self._crash(lib, rec, producer=producer)
                else:
                    if not self._send(lib, rec, producer, rng):
                        producer = self._crash(lib, rec, producer=producer)
        finally:
            for close, h in ((lib.close_consumer, consumer), (lib.close_producer, producer)):
                if h is not None:
                    try:
                        close(h)
                    except Exception:
                        pass
            lib.close()

    def _crash(self, lib, rec, *, producer=None, consumer=None):
        """The client's state is unknown: close it; the next op starts a new process."""
        with rec.op("crash"):
            pass
        self.processes.add(rec.new_process())
        try:
            if producer is not None:
                lib.close_producer(producer)
            if consumer is not None:
                lib.close_consumer(consumer)
        except Exception:
            pass
        return None

    def _open_producer(self, lib, rec, i):
        # the same id per client slot: a replacement fences its predecessor, whose open
        # transaction is then aborted at once instead of holding back read_committed readers
        tid = f"{self.name}-txn-{i}" if self.transactional else None
        try:
            return lib.producer(acks=self.acks, transactional_id=tid)
        except Exception:
            time.sleep(0.2)                   # e.g. no coordinator yet: try again next op
            return None

    def _open_consumer(self, lib, rec, i):
        try:
            c = lib.consumer(f"{self.name}-group" if self.subscribe else f"{self.name}-{i}",
                             self.isolation)
        except Exception:
            time.sleep(0.2)                   # no broker reachable yet: try again next op
            return None
        if self.subscribe:
            topics = sorted({split_key(k)[0] for k in self.keys})
            with rec.op("subscribe", topics) as op:
                lib.subscribe(c, topics, lambda keys: self._rebalanced(rec, keys))
        else:
            with rec.op("assign", list(self.keys), seek_to_beginning=True) as op:
                lib.assign(c, list(self.keys))
        if op.completed.type != "ok":
            time.sleep(0.2)
            return self._crash(lib, rec, consumer=c)
        return c

    def _rebalanced(self, rec, keys):
        """A rebalance callback: recorded in the op in flight, else in the next one."""
        entry = {"keys": sorted(keys)}
        if rec.current is not None:
            rec.current.meta.setdefault("rebalance_log", []).append(entry)
        else:
            self._pending_rebalances.setdefault(rec.process, []).append(entry)

    def _take_rebalances(self, rec, op) -> None:
        for entry in self._pending_rebalances.pop(rec.process, ()):
            op.meta.setdefault("rebalance_log", []).append(entry)

    # --- operations ----------------------------------------------------------------------
    def _send(self, lib, rec, producer, rng) -> bool:
        k, v = rng.choice(self.keys), self._value()
        topic, partition = split_key(k)
        with rec.op("send", [send_mop(k, v)]) as op:
            [(offset, exc)] = lib.produce(producer, [(topic, partition, v)], SEND_WAIT_S)
            if exc is not None:
                raise exc
            op.value = [send_mop(k, v, offset)]
        return (op.completed.error or "") not in FATAL

    def _poll(self, lib, rec, consumer) -> bool:
        with rec.op("poll", [poll_mop()]) as op:
            self._take_rebalances(rec, op)
            got: dict[str, list] = {}
            op.value = [poll_mop(got)]           # what was read stays known if poll raises
            for k, o, v in lib.poll(consumer, self.poll_timeout):
                got.setdefault(k, []).append((o, v))
            op.value = [poll_mop(got)]
            if self.subscribe:
                try:
                    lib.commit_offsets(consumer)
                except Exception as e:            # the reads happened: the op stays ok
                    op.meta["commit_error"] = lib.error_name(e)
        return op.completed.type == "ok"

    def _txn(self, lib, rec, producer, consumer, rng) -> bool:
        """A transaction's outcome is open only once commit was asked for: before that, any
        error (and an abort) means it never committed."""
        n = rng.randint(1, 4)
        sends = [(rng.choice(self.keys), self._value()) for _ in range(n)]
        with_poll = rng.random() < 0.3
        abort = rng.random() < self.abort_share
        invoked = [send_mop(k, v) for k, v in sends] + ([poll_mop()] if with_poll else [])
        healthy = True
        with rec.op("txn", invoked) as op:
            self._take_rebalances(rec, op)
            try:
                lib.begin(producer)
                results = lib.produce(producer, [(*split_key(k), v) for k, v in sends],
                                      SEND_WAIT_S)
                learned = [send_mop(k, v, off, acked=True)
                           for (k, v), (off, _) in zip(sends, results)]
                op.value = learned
                if with_poll:
                    got: dict[str, list] = {}
                    for k, o, v in lib.poll(consumer, 0.2):
                        got.setdefault(k, []).append((o, v))
                    op.value = learned + [poll_mop(got)]
                failed = next((e for _, e in results if e is not None), None)
                if failed is not None or abort:
                    lib.abort(producer, SEND_WAIT_S)
                    if failed is None:
                        op.fail("aborted", aborted=True)
                    else:
                        op.fail(lib.error_name(failed))
                        healthy = lib.error_name(failed) not in FATAL
            except Exception as e:
                op.fail(lib.error_name(e))        # commit never asked for: never committed
                healthy = False
            if op.completed is None:
                try:
                    lib.commit(producer, SEND_WAIT_S)
                except Exception as e:
                    op.info(lib.error_name(e))
                    healthy = False
        return healthy

    # --- the final read ------------------------------------------------------------------
    def final_read(self, timeout: float = 60.0) -> dict[str, int]:
        """Every key from the beginning to its end offset (read_committed); returns the
        end offsets. Retries with a new consumer (a new process) until `timeout`."""
        lib = self.client_class(self.bootstrap, self.extra)
        rec = Recorder(self.history, classify=lib.classify)
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    return self._final_read_once(lib, rec, deadline)
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    rec.new_process()
                    time.sleep(0.5)
        finally:
            lib.close()

    def _targets(self, ends: dict[str, int]) -> dict[str, int]:
        """Per key, the furthest offset below its end that must be readable: acknowledged
        sends of ok ops and anything read (a read_committed position stops short of a
        trailing marker, so the end offset alone cannot tell when a read is complete)."""
        best: dict[str, int] = {}
        for op in self.history.ops:
            known = [(k, o) for k, o, _ in op.reads()]
            if op.type == "ok":
                known += [(k, o) for k, o, _ in op.sends() if o is not None]
            for k, o in known:
                if k in ends and o < ends[k] and o > best.get(k, -1):
                    best[k] = o
        return best

    def _final_read_once(self, lib, rec, deadline) -> dict[str, int]:
        c = lib.consumer(f"{self.name}-final", "read_committed")
        try:
            ends = lib.end_offsets(c, self.keys)
            targets = self._targets(ends)
            read = {k: -1 for k in self.keys}
            with rec.op("assign", list(self.keys), seek_to_beginning=True, final=True):
                lib.assign(c, list(self.keys))
            while time.monotonic() < deadline:
                with rec.op("poll", [poll_mop()], final=True) as op:
                    got: dict[str, list] = {}
                    for k, o, v in lib.poll(c, 1.0):
                        got.setdefault(k, []).append((o, v))
                        read[k] = max(read.get(k, -1), o)
                    op.value = [poll_mop(got)]
                if op.completed.type != "ok":
                    raise RuntimeError(f"final poll: {op.completed.error}")
                pos = lib.positions(c, self.keys)
                if all(pos.get(k, -1) >= ends[k] or read[k] >= targets.get(k, -1)
                       for k in self.keys):
                    return ends
            return ends                 # what was not read by now, the checker reports
        finally:
            lib.close_consumer(c)
