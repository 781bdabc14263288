"""Records the interop tests produce, and the checks that what comes back is exactly that.

Every client produces the same kind of data: keyed records with several headers (a repeated
header name among them), values from empty to a few hundred bytes, some compressible, some not,
and an explicit CreateTime timestamp per record that strictly increases with the record's index.
Because timestamps increase with the index and a partition keeps produce order, a partition's
offsets are ordered by timestamp too, which makes ListOffsets-by-timestamp answers predictable.
"""
from __future__ import annotations

import random
import time
from collections import Counter, defaultdict
from dataclasses import dataclass

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
RECORDS = 10_000
PARTITIONS = 3


@dataclass(frozen=True)
class Rec:
    key: bytes
    value: bytes
    headers: tuple[tuple[str, bytes], ...]
    timestamp: int


@dataclass(frozen=True)
class Delivered:
    """What the producer's delivery report said about one record."""
    rec: Rec
    partition: int
    offset: int
    timestamp: int | None = None  # as reported back, when the client reports it


@dataclass(frozen=True)
class Got:
    """One record as a consumer returned it."""
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int


_WORDS = [b"alpha", b"beta", b"gamma", b"delta", b"kafka", b"gregor", b"stream", b"log"]


def make_records(n: int = RECORDS, *, tag: str, seed: int = 7, text: bool = False,
                 base_ts: int | None = None) -> list[Rec]:
    """n keyed records. `text` keeps keys, values and headers printable ASCII without tabs or
    newlines (what kcat's line-oriented input and JSON output can carry)."""
    rnd = random.Random(f"{seed}-{tag}")
    if base_ts is None:
        # An hour in the past, whole seconds: far from "now" (so a broker that stamps its own
        # time is caught) yet well inside any timestamp-difference limit.
        base_ts = (int(time.time()) - 3600) * 1000
    out = []
    for i in range(n):
        key = b"key-%s-%06d" % (tag.encode(), i)
        kind = i % 4
        if kind == 0:
            value = b""
        elif kind == 1 or text:
            value = b" ".join(rnd.choice(_WORDS) for _ in range(rnd.randrange(1, 40)))
        elif kind == 2:
            value = rnd.randbytes(rnd.randrange(1, 300))
        else:
            value = bytes([i % 256]) * rnd.randrange(1, 500)
        headers = [("idx", b"%d" % i), ("tag", tag.encode())]
        if i % 3 == 0:
            headers.append(("idx", b"again-%d" % i))  # header names may repeat
        if i % 5 == 0:
            headers.append(("empty", b""))
        if not text and i % 7 == 0:
            headers.append(("bin", rnd.randbytes(rnd.randrange(0, 20))))
        out.append(Rec(key, value, tuple(headers), base_ts + i))
    return out


def _fmt(got: Got) -> str:
    return f"partition {got.partition} offset {got.offset} key {got.key!r}"


def check_contiguous(consumed: list[Got], expected_counts: dict[int, int] | None = None) -> dict:
    """Every partition's offsets run 0, 1, 2, ... with no gap and no duplicate (fresh topic)."""
    by_part: dict[int, list[int]] = defaultdict(list)
    for g in consumed:
        by_part[g.partition].append(g.offset)
    counts = {}
    for p, offsets in by_part.items():
        dupes = [o for o, c in Counter(offsets).items() if c > 1]
        assert not dupes, f"partition {p}: offsets returned more than once: {dupes[:10]}"
        offsets.sort()
        assert offsets == list(range(len(offsets))), (
            f"partition {p}: offsets not contiguous from 0; first gap near "
            f"{next((i for i, o in enumerate(offsets) if o != i), None)}")
        counts[p] = len(offsets)
    if expected_counts is not None:
        want = {p: c for p, c in expected_counts.items() if c}
        assert counts == want, f"records per partition: got {counts}, expected {want}"
    return counts


def verify_exact(delivered: list[Delivered], consumed: list[Got], *,
                 log_append_time: bool = False) -> None:
    """The consumer returned exactly the delivered records at exactly the reported partition and
    offset, each with the same key, value, headers and timestamp."""
    assert len(delivered) == len(consumed), (
        f"produced {len(delivered)} records, consumed {len(consumed)}")
    at = {(g.partition, g.offset): g for g in consumed}
    assert len(at) == len(consumed), "the consumer returned some (partition, offset) twice"
    seen_offsets = set()
    for d in delivered:
        assert d.offset >= 0, f"delivery report without an offset for {d.rec.key!r}"
        assert (d.partition, d.offset) not in seen_offsets, (
            f"two records were acknowledged at partition {d.partition} offset {d.offset}")
        seen_offsets.add((d.partition, d.offset))
        g = at.get((d.partition, d.offset))
        assert g is not None, (f"{d.rec.key!r} acknowledged at partition {d.partition} offset "
                               f"{d.offset} but not consumed there")
        assert g.key == d.rec.key, f"{_fmt(g)}: key differs, expected {d.rec.key!r}"
        assert g.value == d.rec.value, (f"{_fmt(g)}: value differs: got {g.value[:40]!r}..., "
                                        f"expected {d.rec.value[:40]!r}...")
        assert g.headers == d.rec.headers, (f"{_fmt(g)}: headers differ: got {g.headers!r}, "
                                            f"expected {d.rec.headers!r}")
        if not log_append_time:
            assert g.timestamp == d.rec.timestamp, (
                f"{_fmt(g)}: timestamp {g.timestamp}, expected {d.rec.timestamp}")
            if d.timestamp is not None:
                assert d.timestamp == d.rec.timestamp, (
                    f"delivery report timestamp {d.timestamp} for {d.rec.key!r}, "
                    f"expected {d.rec.timestamp}")
    check_contiguous(consumed)
    check_produce_order(consumed)


def verify_contents(records: list[Rec], consumed: list[Got]) -> None:
    """For producers that get no offsets back (acks=0): the same records came back, once each,
    at contiguous offsets."""
    want = Counter((r.key, r.value, r.headers, r.timestamp) for r in records)
    got = Counter((g.key, g.value, g.headers, g.timestamp) for g in consumed)
    missing = want - got
    extra = got - want
    assert not missing and not extra, (
        f"{sum(missing.values())} records missing (e.g. {[k[0] for k in list(missing)[:3]]}), "
        f"{sum(extra.values())} unexpected (e.g. {[k[0] for k in list(extra)[:3]]})")
    check_contiguous(consumed)
    check_produce_order(consumed)


def check_produce_order(consumed: list[Got]) -> None:
    """Within a partition, records keep the order they were produced in (index order), which
    also shows up as timestamps increasing with the offset."""
    by_part: dict[int, list[Got]] = defaultdict(list)
    for g in consumed:
        by_part[g.partition].append(g)
    for p, gs in by_part.items():
        gs.sort(key=lambda g: g.offset)
        keys = [g.key for g in gs]
        assert keys == sorted(keys), f"partition {p}: records are not in produce order"


def expected_offset_for_time(consumed: list[Got], partition: int, ts: int) -> int | None:
    """Kafka's answer to ListOffsets(ts): the first offset whose timestamp is >= ts, or none."""
    cands = [g.offset for g in consumed if g.partition == partition and g.timestamp >= ts]
    return min(cands) if cands else None


def timestamp_probes(consumed: list[Got], partition: int) -> list[tuple[int, int | None]]:
    """(timestamp, expected offset) pairs: before everything, a few exact record timestamps,
    between two records, and after everything."""
    gs = sorted((g for g in consumed if g.partition == partition), key=lambda g: g.offset)
    if not gs:
        return []
    probes = [gs[0].timestamp - 10_000, gs[0].timestamp, gs[len(gs) // 2].timestamp,
              gs[len(gs) // 2].timestamp + 1, gs[-1].timestamp, gs[-1].timestamp + 1]
    return [(ts, expected_offset_for_time(consumed, partition, ts)) for ts in probes]
