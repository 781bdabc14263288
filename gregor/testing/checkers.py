"""Checkers: verdicts on what a Kafka cluster (gregor's or any other) promised and delivered.

ReplicationChecker: what an operator is promised about acknowledged records.

Feed it what the producer was told (each acknowledged record's partition and offset) and what
consumers read back; `problems()` lists every broken promise:
- lost: an acknowledged record that no consumer read;
- moved: an acknowledged record read at another offset than the one acknowledged;
- duplicated: one record (by its unique value) read at more than one offset;
- inconsistent: one offset read with two different values (e.g. by consumers of two leaders);
- out of order: per key, values not read in the order they were produced (acknowledged
  records of one key carry increasing sequence numbers in their values).
Values must be unique per produced record (e.g. b"<key>:<seq>"); unacknowledged records may be
read or not (an acks=all timeout may still have committed), but never twice.

    checker = ReplicationChecker()
    for seq in range(1000):
        value = f"k{seq % 3}:{seq}".encode()
        checker.sent_record(value)
        producer.produce(topic, value, key=..., on_delivery=lambda err, m, v=value:
                         err is None and checker.acknowledged(v, m.partition(), m.offset()))
    ... read everything back: checker.consumed(m.partition(), m.offset(), m.key(), m.value())
    assert not checker.problems(), checker.problems()
"""
from __future__ import annotations

from collections import defaultdict


class ReplicationChecker:
    def __init__(self):
        self.acked: dict[bytes, tuple[int, int]] = {}          # value -> (partition, offset)
        self.sent: set[bytes] = set()
        self.read_at: dict[bytes, set[tuple[int, int]]] = defaultdict(set)
        self.offset_values: dict[tuple[int, int], set[bytes]] = defaultdict(set)
        self.read_order: dict[tuple[int, bytes], list[bytes]] = defaultdict(list)

    def sent_record(self, value: bytes) -> None:
        self.sent.add(value)

    def acknowledged(self, value: bytes, partition: int, offset: int) -> None:
        self.acked[value] = (partition, offset)

    def consumed(self, partition: int, offset: int, key: bytes | None, value: bytes) -> None:
        self.read_at[value].add((partition, offset))
        self.offset_values[(partition, offset)].add(value)
        self.read_order[(partition, key)].append(value)

    def problems(self) -> list[str]:
        out = []
        for value, where in sorted(self.acked.items(), key=lambda kv: kv[1]):
            seen = self.read_at.get(value)
            if not seen:
                out.append(f"lost: {value!r} acknowledged at {where}, never read")
            elif where not in seen:
                out.append(f"moved: {value!r} acknowledged at {where}, read at {sorted(seen)}")
        for value, seen in self.read_at.items():
            if len(seen) > 1:
                out.append(f"duplicated: {value!r} read at {sorted(seen)}")
            if self.sent and value not in self.sent:
                out.append(f"unknown: {value!r} read but never sent")
        for where, values in self.offset_values.items():
            if len(values) > 1:
                out.append(f"inconsistent: offset {where} read as {sorted(values)}")
        for (partition, key), values in self.read_order.items():
            seqs = [_seq(v) for v in dict.fromkeys(values)]
            if any(b < a for a, b in zip(seqs, seqs[1:])):
                out.append(f"out of order: key {key!r} on partition {partition}: {seqs[:20]}")
        return out

    def summary(self) -> str:
        return (f"{len(self.sent)} sent, {len(self.acked)} acknowledged, "
                f"{len(self.read_at)} distinct values read")


def _seq(value: bytes) -> int:
    return int(value.rsplit(b":", 1)[1])
