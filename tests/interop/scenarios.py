"""The interop scenarios, written once and run with every client.

Each client module provides an adapter with four operations (create_topic, produce, consume,
list_offsets); these functions drive them and check the answers against dataset.py's rules.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from tests.interop.dataset import (PARTITIONS, RECORDS, Delivered, Got, Rec, make_records,
                                   timestamp_probes, verify_contents, verify_exact)
from tests.interop.targets import target_name
from tests.interop.wire import check_codec_used, check_idempotent_batches

# Generous bounds for one client run of 10,000 records against a Python broker on a shared
# 2-core machine; they only stop a hung test, no timing is asserted.
PRODUCE_TIMEOUT_S = 120.0
CONSUME_TIMEOUT_S = 120.0


class ClientAdapter(Protocol):
    name: str
    text_only: bool  # True when the client can only carry printable text (kcat)

    def create_topic(self, bootstrap: str, topic: str, partitions: int) -> int:
        """Create the topic (or make it exist); return its partition count."""

    def produce(self, bootstrap: str, topic: str, records: list[Rec], codec: str,
                acks: str | None) -> list[Delivered]:
        """Produce with the client's defaults, except compression and acks (None = default)."""

    def expects_idempotence(self, acks: str | None) -> bool:
        """Whether the producer should be idempotent with these settings (checked on disk)."""

    def consume(self, bootstrap: str, topic: str, partitions: int, count: int) -> list[Got]:
        """Read `count` records from the beginning of every partition with assign()."""

    def list_offsets(self, bootstrap: str, topic: str, partitions: int,
                     probes: dict[int, list[int]]) -> tuple[dict, dict, dict]:
        """(earliest {p: off}, latest {p: off}, by_time {(p, ts): off or None})."""


@dataclass
class RoundTrip:
    topic: str
    partitions: int
    records: list[Rec]
    delivered: list[Delivered]
    consumed: list[Got] = field(default_factory=list)


def roundtrip(client: ClientAdapter, bootstrap: str, topic: str, codec: str,
              acks: str | None = None, n: int = RECORDS) -> RoundTrip:
    """Create, produce n records, consume them back, and check they match exactly."""
    partitions = client.create_topic(bootstrap, topic, PARTITIONS)
    assert partitions >= 1, f"topic {topic} has no partitions"
    records = make_records(n, tag=f"{client.name}-{codec}-{acks}", text=client.text_only)
    delivered = client.produce(bootstrap, topic, records, codec, acks)
    assert len(delivered) == n, f"{len(delivered)} of {n} records were acknowledged"
    consumed = client.consume(bootstrap, topic, partitions, n)
    if acks == "0":
        verify_contents(records, consumed)
    else:
        verify_exact(delivered, consumed)
    if target_name() == "gregor":  # tansu answers raw Fetch v10 with no partitions
        port = int(bootstrap.rsplit(":", 1)[1])
        check_codec_used(port, topic, partitions, codec)
        if client.expects_idempotence(acks):
            check_idempotent_batches(port, topic, partitions)
    return RoundTrip(topic, partitions, records, delivered, consumed)


def check_list_offsets(client: ClientAdapter, bootstrap: str, rt: RoundTrip) -> None:
    """Earliest is 0, latest is the partition's record count, and by-timestamp gives the first
    offset at or after the timestamp (none past the last record)."""
    probes = {p: timestamp_probes(rt.consumed, p) for p in range(rt.partitions)}
    earliest, latest, by_time = client.list_offsets(
        bootstrap, rt.topic, rt.partitions, {p: [ts for ts, _ in pr] for p, pr in probes.items()})
    counts = {p: sum(1 for g in rt.consumed if g.partition == p) for p in range(rt.partitions)}
    assert earliest == {p: 0 for p in range(rt.partitions)}, f"earliest offsets {earliest}"
    assert latest == counts, f"latest offsets {latest}, expected the record counts {counts}"
    for p, pr in probes.items():
        for ts, want in pr:
            got = by_time.get((p, ts), "missing")
            assert got == want, (f"partition {p}: offset for timestamp {ts} is {got}, "
                                 f"expected {want}")
