"""What is really stored: the compression codec of every batch of a partition, read with raw
Fetch v10 requests (the first version that may carry zstd). A client that quietly sends uncompressed batches (e.g. because it decided
the broker lacks a codec) would otherwise pass every round-trip test of that codec."""
from __future__ import annotations

import struct
from collections import Counter

from tests.faults import frames

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
FETCH_BYTES = 1 << 20  # per request; the loop continues from the next offset


def _partition_records(body: bytes) -> tuple[int, int, bytes]:
    """(error, high_watermark, records) of the single partition in a Fetch v10 response."""
    (top_error,) = struct.unpack_from(">h", body, 4)
    assert top_error == 0, f"fetch error {top_error}"
    (topics,) = struct.unpack_from(">i", body, 10)
    assert topics == 1, f"a fetch of one partition answered {topics} topics"
    pos = 4 + 2 + 4 + 4  # throttle_time_ms, error_code, session_id, topics count
    (name_len,) = struct.unpack_from(">h", body, pos)
    pos += 2 + name_len + 4 + 4  # name, partitions count, partition index
    error, hw, _lso, _log_start = struct.unpack_from(">hqqq", body, pos)
    pos += 2 + 8 + 8 + 8
    (aborted,) = struct.unpack_from(">i", body, pos)
    pos += 4 + max(aborted, 0) * 16
    (size,) = struct.unpack_from(">i", body, pos)
    pos += 4
    return error, hw, body[pos:pos + max(size, 0)]


def stored_batches(port: int, topic: str, partition: int) -> list[tuple[int, int, int]]:
    """(codec id, producer id, base sequence) of every batch in the partition."""
    batches = []
    offset, corr = 0, 0
    with frames.connect(port) as s:
        while True:
            corr += 1
            s.sendall(frames.fetch_v10(corr, topic, partition, offset))
            _, body = frames.read_response(s)
            error, hw, records = _partition_records(body)
            assert error == 0, f"raw fetch of {topic}[{partition}] at {offset}: error {error}"
            pos = 0
            while pos + 61 <= len(records):  # 61: a v2 batch header
                base, length = struct.unpack_from(">qi", records, pos)
                if pos + 12 + length > len(records):
                    break  # a partial batch at the end of the response
                (attributes,) = struct.unpack_from(">h", records, pos + 21)
                (last_delta,) = struct.unpack_from(">i", records, pos + 23)
                producer_id, _epoch, base_sequence = struct.unpack_from(">qhi", records, pos + 43)
                batches.append((attributes & 0x07, producer_id, base_sequence))
                offset = base + last_delta + 1
                pos += 12 + length
            if offset >= hw or not records:
                return batches


def check_codec_used(port: int, topic: str, partitions: int, codec: str) -> None:
    want = CODEC_IDS[codec]
    seen: Counter = Counter()
    for p in range(partitions):
        seen.update(codec for codec, _, _ in stored_batches(port, topic, p))
    assert seen, f"{topic}: no batches stored"
    # A client may send a batch uncompressed when compressing would not shrink it.
    assert set(seen) <= {0, want} and seen[want] > 0, (
        f"{topic} was produced with {codec} but its batches are stored with codecs "
        f"{dict(seen)} (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)")


def check_idempotent_batches(port: int, topic: str, partitions: int) -> None:
    """Every batch carries a producer id and a sequence: the producer really was idempotent."""
    for p in range(partitions):
        plain = [(pid, seq) for _, pid, seq in stored_batches(port, topic, p) if pid < 0 or seq < 0]
        assert not plain, (f"{topic}[{p}]: {len(plain)} batches without a producer id/sequence: "
                           "the producer was not idempotent")
