"""Tell a client's re-send under a bumped producer epoch from a broker's duplicate, using the
batch headers of the replicas' logs.

The checker reports `duplicate` when one value sits at several offsets. A broker that accepts a
retried batch twice is at fault. But librdkafka (confluent-kafka), when a message of an
idempotent producer reaches message.timeout.ms, bumps the producer epoch and restarts the
sequences at its first queued message, re-sending messages whose earlier attempt may have been
written; Kafka accepts sequence 0 of a new epoch, so the log holds two copies under one
producer id and different epochs. That is the client's behaviour, not the broker's.

`reclassify_duplicates(report, data_dirs, writer_library)` looks each `duplicate` example up in
the logs: when every copy was written by one producer id under different epochs, and the value's
writer used a librdkafka client, the example moves to `epoch-bump-duplicate` (reported, allowed);
anything else stays `duplicate`. Pure over (report, directories, mapping): no broker needed.
"""
from __future__ import annotations

import os
from dataclasses import replace
from typing import Mapping

from ..txn_index_check import batch_headers, partition_dirs
from .op import split_key
from .report import Report

EPOCH_BUMP = "epoch-bump-duplicate"
LIBRDKAFKA_CLIENTS = frozenset({"confluent-kafka"})    # the workloads built on librdkafka
EXPLANATION = ("one producer id, different epochs: librdkafka bumped the idempotent "
               "producer's epoch after a message timeout and re-sent a possibly written "
               "message as sequence 0 of the new epoch, which the broker accepts as Kafka "
               "does (client behaviour, librdkafka issue #4953), not a broker duplicate")


def batch_producers(directory: str, offsets) -> dict[int, tuple[int, int, int]]:
    """{offset: (producer id, producer epoch, sequence)} for the wanted offsets found in one
    partition directory's log."""
    want, out = set(offsets), {}
    for h in batch_headers(directory):
        last = h.base_offset + h.last_offset_delta
        for o in want:
            if h.base_offset <= o <= last:
                seq = h.base_sequence + (o - h.base_offset) if h.base_sequence >= 0 else -1
                out[o] = (h.producer_id, h.producer_epoch, seq)
    return out


def duplicate_evidence(key: str, offsets, data_dirs) -> dict[int, tuple[int, int, int]] | None:
    """The producers of these offsets of key, from the first replica whose log holds them
    all (None when no replica does)."""
    topic, partition = split_key(key)
    name = f"{topic}-{partition}"
    for d in data_dirs:
        for part in partition_dirs(os.fspath(d)):
            if os.path.basename(part) != name:
                continue
            found = batch_producers(part, offsets)
            if len(found) == len(set(offsets)):
                return found
    return None


def is_epoch_bump(evidence: Mapping[int, tuple[int, int, int]] | None) -> bool:
    """Every copy under one producer id (an idempotent one) and no two under one epoch."""
    if not evidence:
        return False
    pids = {pid for pid, _, _ in evidence.values()}
    epochs = [epoch for _, epoch, _ in evidence.values()]
    return (len(pids) == 1 and next(iter(pids)) >= 0 and len(evidence) > 1
            and len(set(epochs)) == len(epochs))


def reclassify_duplicates(report: Report, data_dirs,
                          writer_library: Mapping[int, str]) -> Report:
    """The report with each `duplicate` example the logs show to be a librdkafka epoch-bump
    re-send moved to EPOCH_BUMP (allowed); each example gains its `producers` evidence.
    writer_library maps a writer's op index to its client library's name."""
    if isinstance(data_dirs, (str, os.PathLike)):
        data_dirs = [data_dirs]
    data_dirs = list(data_dirs)
    kept, bumped = [], []
    for ex in report.anomalies.get("duplicate") or []:
        evidence = duplicate_evidence(ex["key"], ex["offsets"], data_dirs)
        library = writer_library.get(ex.get("writer"))
        ex = {**ex, "library": library}
        if evidence is not None:
            ex["producers"] = {o: {"producer_id": p, "epoch": e, "sequence": s}
                               for o, (p, e, s) in sorted(evidence.items())}
        if library in LIBRDKAFKA_CLIENTS and is_epoch_bump(evidence):
            bumped.append({**ex, "explanation": EXPLANATION})
        else:
            kept.append(ex)
    if not bumped and "duplicate" not in report.anomalies:
        return report
    anomalies = {**report.anomalies, "duplicate": kept}
    anomalies[EPOCH_BUMP] = (report.anomalies.get(EPOCH_BUMP) or []) + bumped
    return replace(report, anomalies=anomalies, allowed=report.allowed | {EPOCH_BUMP})


def writer_libraries(history, processes: Mapping[str, set]) -> dict[int, str]:
    """{op index: library} for every op of a process that processes[library] holds."""
    by_process = {p: lib for lib, ps in processes.items() for p in ps}
    return {op.index: by_process[op.process] for op in history
            if op.process in by_process}
