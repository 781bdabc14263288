"""The bytes a ShareFetch sends for acquired ranges: the stored batches that hold them, taken
from the chunks acquisition already read (one slice when they are contiguous) or read again
for ranges acquisition did not read (redeliveries), always the same bytes as the log's."""
from __future__ import annotations

from types import SimpleNamespace

from gregor.broker.share.partition_state import SharePartition
from gregor.broker.share.service import ShareService
from gregor.log import Log, LogConfig
from gregor.protocol.records.header import iter_headers
from tests.log.batches import make_batch


def _partition(tmp_path, batches: int, per_batch: int):
    log = Log.open(tmp_path / "p", LogConfig(flush_rolled_in_background=False))
    for i in range(batches):
        log.append(make_batch(per_batch, 40, tag=i))
    p = SimpleNamespace(log=log, high_watermark=log.log_end_offset,
                        last_stable_offset=log.log_end_offset)
    return log, p


def _stored(log, first: int, last: int) -> bytes:
    """The log's own batches overlapping [first, last], read independently."""
    data = log.read(0, 1 << 30)
    return b"".join(data[pos:pos + h.size] for pos, h in iter_headers(data)
                    if h.last_offset >= first and h.base_offset <= last)


def test_fresh_acquisition_is_one_slice_of_what_acquisition_read(tmp_path):
    svc = ShareService.__new__(ShareService)        # log_batches/records_bytes use no state
    log, p = _partition(tmp_path, batches=6, per_batch=10)
    sp = SharePartition(0, max_record_locks=1000)
    batches = svc.log_batches(p, False, 1 << 20)
    ranges = sp.acquire("m", 35, batches, 0, 30_000)
    data = svc.records_bytes(p, ranges, batches.seen)
    assert isinstance(data, memoryview)             # no copy: sent as a part of the frame
    assert bytes(data) == _stored(log, 0, 39)       # the soft limit takes the 4th batch whole
    assert bytes(data) == bytes(svc.records_bytes(p, ranges))    # without seen: read again
    log.close()


def test_redelivered_range_inside_a_batch_and_fresh_batches_in_one_fetch(tmp_path):
    svc = ShareService.__new__(ShareService)
    log, p = _partition(tmp_path, batches=6, per_batch=10)
    sp = SharePartition(0, max_record_locks=1000)
    first = sp.acquire("m", 20, svc.log_batches(p, False, 1 << 20), 0, 30_000)
    assert [(r.first_offset, r.last_offset) for r in first] == [(0, 19)]
    sp.acknowledge("m", 0, 14, [1])                 # accept 0-14; 15-19 released below
    sp.release_member("m")
    batches = svc.log_batches(p, False, 1 << 20)
    ranges = sp.acquire("m", 30, batches, 0, 30_000)
    assert ranges[0].first_offset == 15              # redelivery starts inside batch 10-19
    data = svc.records_bytes(p, ranges, batches.seen)
    assert bytes(data) == _stored(log, 15, ranges[-1].last_offset)
    offsets = [h.base_offset for _pos, h in iter_headers(bytes(data))]
    assert offsets == sorted(set(offsets))           # every batch once, in order
    log.close()
