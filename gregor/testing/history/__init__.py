"""Histories of Kafka client operations and a checker for Jepsen's Kafka anomalies.

- `op`: the `Op` record and the micro-operation helpers (`send`, `poll`, `key`);
- `history`: `History`, thread-safe, kept as JSON lines;
- `recorder`: `Recorder`, so each client call records its invoke and its completion;
- `checker`: `check(history)` -> `Report` (lost-write, unseen, duplicate, G1a, ...);
- `workloads/`: the same workload shape over confluent-kafka, kafka-python, aiokafka and
  gregor's client, each recording a history.

docs/jepsen.md, "The checker and the history", describes the model and each anomaly.
"""
from __future__ import annotations

from gregor.testing.history.history import History
from gregor.testing.history.op import (ASSIGN, COMPLETIONS, CRASH, FAIL, INFO, INVOKE, OK,
                                       POLL, SEND, SUBSCRIBE, TXN, Op, key, normalize_key,
                                       poll, send, split_key)
from gregor.testing.history.recorder import PendingOp, Recorder, default_classify
from gregor.testing.history.report import DEFAULT_ALLOWED, Report
from gregor.testing.history.checker import ANOMALIES, check

__all__ = ["check", "Report", "ANOMALIES", "DEFAULT_ALLOWED", "History", "Op", "Recorder", "PendingOp", "default_classify", "key", "split_key",
           "normalize_key", "send", "poll", "INVOKE", "OK", "FAIL", "INFO", "COMPLETIONS",
           "SEND", "POLL", "TXN", "ASSIGN", "SUBSCRIBE", "CRASH"]
