"""The exactly-once sink (deliveryGuarantee=exactly-once): one transaction per task and
micro-batch, committed by the driver once every task of the batch succeeded.

Why it is exactly-once (docs/transactions.md has the full argument):
- a task writes inside a transaction with the id `<prefix>-<queryId>-<partitionId>`; a retried
  attempt (or the replay after a restart) re-initialises the id first, which fences the earlier
  attempt and aborts its transaction, and only then reads the progress offset below;
- in the same transaction the task commits, for the group named like the transactional id, the
  batch id as an offset of partition 0 of the sink topic: that offset becomes visible exactly
  when the task's records do;
- the task leaves its transaction open and hands (id, producer id, epoch) to the driver, whose
  commit() ends every task's transaction with EndTxn(commit), and abort() with EndTxn(abort);
- when the driver dies half-way and Spark replays the batch, a task whose group offset already
  says this batch (or a later one) writes nothing: its transaction was committed;
- when a write fails, the driver's abort() also re-initialises the ids of the tasks that
  reported nothing: Spark kills a failed task's Python worker before it can abort its own
  transaction, which would otherwise stay open until the broker's transaction timeout.

tests/spark/test_spark_exactly_once_kill.py kills the driver (SIGKILL) at each of these points.

Readers see a batch whole with isolation.level=read_committed (the gregor source's
`kafka.isolation.level`, any Kafka client's `isolation.level`).
"""
from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass

from pyspark.sql.datasource import WriterCommitMessage

from gregor.protocol.errors import ErrorCode, error_for_code

from . import worker_heap
from .client import RecordWriter
from .options import SinkOptions

log = logging.getLogger("gregor.spark")

BATCH_ID_PROPERTY = "streaming.sql.batchId"      # set by Spark's micro-batch execution
QUERY_ID_PROPERTY = "sql.streaming.queryId"      # stable across restarts of a query
_RETRIABLE = {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
              ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.CONCURRENT_TRANSACTIONS,
              ErrorCode.UNSTABLE_OFFSET_COMMIT}


@dataclass
class TaskTransaction(WriterCommitMessage):
    rows: int
    transactional_id: str | None        # None: the batch was committed by an earlier run
    producer_id: int = -1
    producer_epoch: int = -1


def new_write_id() -> str:
    """For batch writes (no query id): one per write job."""
    return uuid.uuid4().hex[:12]


def task_identity(write_id: str) -> tuple[str, int, int]:
    """(query or write id, batch id, partition id) of the running Spark task."""
    from pyspark import TaskContext
    ctx = TaskContext.get()
    if ctx is None:
        return write_id, 0, 0
    query = ctx.getLocalProperty(QUERY_ID_PROPERTY)
    batch = ctx.getLocalProperty(BATCH_ID_PROPERTY)
    return query or write_id, int(batch) if batch is not None else 0, ctx.partitionId()


def write_task(opts: SinkOptions, iterator, write_id: str) -> TaskTransaction:
    query, batch, partition = task_identity(write_id)
    tid = f"{opts.transactional_id_prefix}-{query}-{partition}"
    progress = (opts.topic, 0)
    cfg = dict(opts.client)
    cfg["transactional.id"] = tid
    cfg["transaction.timeout.ms"] = str(opts.transaction_timeout_ms)
    # InitProducerId first: it fences an earlier attempt or run of this task and aborts the
    # transaction it left open (a killed driver leaves every task's transaction open, with
    # its batch-id offset pending). Only then is the group's committed offset stable; asked
    # before, OffsetFetch(require_stable) answers UNSTABLE_OFFSET_COMMIT until the broker
    # times that transaction out (transactionTimeoutMs, 15 minutes by default).
    writer = RecordWriter(cfg, opts.topic, transactional=True)
    try:
        with Coordinators(opts.client) as coords:
            done = coords.committed_offset(tid, progress)
        if done is not None and done >= batch:
            log.info("gregor sink: %s already committed batch %d; writing nothing", tid, batch)
            for _ in iterator:
                pass
            writer.close()      # nothing was sent: no transaction is open on the broker
            return TaskTransaction(0, None)
        for b in iterator:
            writer.write(b)
    except BaseException:
        writer.abandon()
        raise
    pid, epoch = writer.prepare({progress: (batch, f"spark-batch:{batch}")}, tid)
    worker_heap.settle()
    return TaskTransaction(writer.rows, tid, pid, epoch)


def end_all(client_config: dict, messages, commit: bool, timeout_s: float = 60.0) -> int:
    """EndTxn for every task's transaction; returns rows made visible (or dropped)."""
    rows = 0
    with Coordinators(client_config) as coords:
        for m in messages:
            if m is None or m.transactional_id is None:
                continue
            coords.end_transaction(m.transactional_id, m.producer_id, m.producer_epoch,
                                   commit, timeout_s)
            rows += m.rows
    return rows


def fence_failed(client_config: dict, base: str | None, messages, timeout_ms: int,
                 timeout_s: float = 60.0) -> list[str]:
    """On the driver, when a write fails: InitProducerId for the transactional id of every task
    that reported no message (`<base>-<partitionId>`), which aborts a transaction such a task
    left open. Spark kills a failed task's Python worker (SIGKILL) before the task can abort
    its own transaction, and a batch write's ids are never used again: without this its
    records would hold back read_committed readers of the topic (the last stable offset)
    until the broker times the transaction out. `base` None (a streaming batch none of whose
    tasks reported, so the query id is unknown here): nothing to do; the query's restart
    fences the same ids. Returns the fenced ids."""
    if base is None:
        return []
    fenced = []
    with Coordinators(client_config) as coords:
        for partition, m in enumerate(messages):
            if m is None:
                tid = f"{base}-{partition}"
                coords.fence(tid, timeout_ms, timeout_s)
                fenced.append(tid)
    return fenced


def base_of(messages) -> str | None:
    """`<prefix>-<query id>` from a task's message (tasks name their id `<base>-<partition>`)."""
    for m in messages:
        if m is not None and m.transactional_id:
            return m.transactional_id.rsplit("-", 1)[0]
    return None


class Coordinators:
    """The few coordinator calls the sink's driver and tasks make, over an admin connection."""

    def __init__(self, client_config: dict):
        from gregor.client.admin import AdminClient
        self._admin = AdminClient(dict(client_config))
        self._net = self._admin._net        # the admin client's connections, reused

    def __enter__(self) -> "Coordinators":
        return self

    def __exit__(self, *exc) -> None:
        self._admin.close()

    def _call(self, key: str, key_type: int, api: str, max_version: int, body, timeout_s: float,
              code_of) -> dict:
        deadline = time.monotonic() + timeout_s
        backoff = 0.05
        while True:
            remaining = max(0.01, deadline - time.monotonic())
            node, code = self._find(key, key_type, remaining)
            if not code:
                version = min(max_version,
                              self._net.api_version(node, api, timeout=remaining) or 0)
                resp = self._net.request(node, api, body(version), version, remaining)
                code = code_of(resp)
                if not code:
                    return resp
            if code not in _RETRIABLE or time.monotonic() >= deadline:
                raise error_for_code(code, f"{api} for {key!r} failed")
            time.sleep(backoff)
            backoff = min(1.0, backoff * 2)

    def _find(self, key: str, key_type: int, timeout: float) -> tuple[int | None, int]:
        self._admin._metadata([], timeout)
        version = min(3, self._net.api_version(None, "FindCoordinator", timeout=timeout) or 0)
        resp = self._net.request(None, "FindCoordinator",
                                 {"key": key, "key_type": key_type}, version, timeout)
        return resp.get("node_id"), resp.get("error_code", 0)

    def end_transaction(self, tid: str, pid: int, epoch: int, commit: bool,
                        timeout_s: float) -> None:
        self._call(tid, 1, "EndTxn", 3,
                   lambda v: {"transactional_id": tid, "producer_id": pid,
                              "producer_epoch": epoch, "committed": commit},
                   timeout_s, lambda r: r["error_code"])

    def fence(self, tid: str, transaction_timeout_ms: int, timeout_s: float) -> None:
        """InitProducerId for tid: bumps its epoch, fencing whoever holds it, and aborts its
        open transaction (CONCURRENT_TRANSACTIONS, retried, while that abort completes)."""
        self._call(tid, 1, "InitProducerId", 4,
                   lambda v: {"transactional_id": tid,
                              "transaction_timeout_ms": transaction_timeout_ms,
                              "producer_id": -1, "producer_epoch": -1},
                   timeout_s, lambda r: r["error_code"])

    def committed_offset(self, group: str, tp: tuple[str, int],
                         timeout_s: float = 60.0) -> int | None:
        """The group's committed offset of tp (None when it has none); waits while a
        commit of it is still pending in a transaction."""
        def code_of(r):
            if r.get("error_code"):
                return r["error_code"]
            for t in r["topics"]:
                for p in t["partitions"]:
                    if p["error_code"]:
                        return p["error_code"]
            return 0
        resp = self._call(group, 0, "OffsetFetch", 7,
                          lambda v: {"group_id": group, "require_stable": True,
                                     "topics": [{"name": tp[0], "partition_indexes": [tp[1]]}]},
                          timeout_s, code_of)
        for t in resp["topics"]:
            for p in t["partitions"]:
                if p["committed_offset"] >= 0:
                    return p["committed_offset"]
        return None
