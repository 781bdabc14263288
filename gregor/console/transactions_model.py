"""Transactions as the console shows them: every transactional id the coordinators know
(ListTransactions + DescribeTransactions), and the producers with state on partitions
(DescribeProducers) with the ones that look hanging.

"Hanging" follows Kafka's `kafka-transactions.sh find-hanging`: a producer with an open
transaction on a partition (current_txn_start_offset >= 0) that its coordinator does not list
as ongoing on that partition, silent for longer than transaction.max.timeout.ms (15 minutes by
default). Such a transaction holds the partition's last stable offset back, so read_committed
consumers stop there.
"""
from __future__ import annotations

import time

from .records import iso

# Kafka's default transaction.max.timeout.ms: no transaction may stay open longer.
MAX_TXN_TIMEOUT_MS = 900_000
_OPEN = {"Ongoing", "PrepareCommit", "PrepareAbort"}


class TransactionsModel:
    def __init__(self, pool):
        self.pool = pool

    async def transactions(self, topic: str | None = None) -> dict:
        def read(admin):
            listing = admin.list_transactions()
            desc = admin.describe_transactions([t.transactional_id for t in listing]) \
                if listing else {}
            tps = {tp for d in desc.values() if d.state in _OPEN for tp in d.partitions}
            if topic:
                td = admin.describe_topics([topic])[topic]
                tps |= {(topic, p.partition) for p in td.partitions}
            producers = admin.describe_producers(sorted(tps)) if tps else {}
            return listing, desc, producers
        listing, desc, producers = await self.pool.admin(read)
        now = int(time.time() * 1000)
        txns = []
        open_on = set()          # (producer id, topic, partition) the coordinators know open
        for t in listing:
            d = desc.get(t.transactional_id)
            age = now - d.start_time_ms if d and d.start_time_ms > 0 and d.state in _OPEN \
                else None
            if d and d.state in _OPEN:
                open_on |= {(d.producer_id, tp[0], tp[1]) for tp in d.partitions}
            txns.append({
                "transactional_id": t.transactional_id, "state": d.state if d else t.state,
                "producer_id": t.producer_id, "producer_epoch": d.producer_epoch if d else None,
                "timeout_ms": d.timeout_ms if d else None,
                "started": iso(d.start_time_ms) if d and d.start_time_ms > 0 else None,
                "age_ms": age, "coordinator": t.coordinator_id,
                "partitions": [[tp[0], tp[1]] for tp in d.partitions] if d else [],
                "overdue": bool(d and age is not None and age > d.timeout_ms)})
        rows = []
        for (tname, p), states in sorted(producers.items()):
            for s in states:
                silent = now - s.last_timestamp if s.last_timestamp > 0 else None
                is_open = s.current_txn_start_offset >= 0
                hanging = (is_open and (s.producer_id, tname, p) not in open_on
                           and silent is not None and silent > MAX_TXN_TIMEOUT_MS)
                rows.append({"topic": tname, "partition": p, "producer_id": s.producer_id,
                             "producer_epoch": s.producer_epoch,
                             "last_sequence": s.last_sequence,
                             "last_timestamp": s.last_timestamp,
                             "last_time": iso(s.last_timestamp),
                             "coordinator_epoch": s.coordinator_epoch,
                             "current_txn_start_offset": s.current_txn_start_offset,
                             "open": is_open, "hanging": hanging})
        return {"transactions": txns, "producers": rows, "topic": topic,
                "open_count": sum(1 for t in txns if t["state"] in _OPEN),
                "hanging_count": sum(1 for r in rows if r["hanging"])}
