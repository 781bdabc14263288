"""Property: any mix of appends, rolls, truncations, DeleteRecords, retention, clean reopens and
undamaged crashes keeps the log equal to a plain list-of-batches model: same offsets, same
bytes, same log start, same producer state."""
from __future__ import annotations

import os
import tempfile
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gregor.log import Log, LogConfig
from gregor.protocol.records.header import parse_header
from tests.log.batches import make_batch, read_all

PRODUCERS = [-1, 3]
RETENTION_BYTES = 900


def config() -> LogConfig:
    return LogConfig(segment_bytes=500, index_interval_bytes=150, retention_ms=-1,
                     retention_bytes=RETENTION_BYTES, flush_rolled_in_background=False,
                     producer_id_expiration_ms=1 << 62)


append_op = st.tuples(st.just("append"), st.integers(1, 3), st.integers(0, 120),
                      st.sampled_from(PRODUCERS))
op = st.one_of(
    append_op, append_op, append_op, append_op, append_op, append_op,   # about half the ops
    st.tuples(st.just("truncate"), st.floats(0, 1.2)),
    st.tuples(st.just("delete_records"), st.floats(0, 1)),
    st.just(("roll",)), st.just(("retention",)), st.just(("reopen",)), st.just(("crash",)),
    st.tuples(st.just("truncate_fully"), st.integers(0, 50)),
)


class Model:
    def __init__(self):
        # every batch below the log end, also those retention or DeleteRecords removed (their
        # producer state stays): (base offset, last offset, stored bytes)
        self.batches: list[tuple[int, int, bytes]] = []
        self.origin = 0          # where the log began (0, or the last truncate_fully)
        self.start = 0
        self.end = 0

    def append(self, data: bytes):
        h = parse_header(data)
        last = self.end + h.last_offset_delta
        stored = self.end.to_bytes(8, "big") + data[8:]
        self.batches.append((self.end, last, stored))
        self.end = last + 1

    def truncate_to(self, offset: int):
        if offset >= self.end:
            return
        if offset < self.start:
            self.truncate_fully(offset)
            return
        self.batches = [b for b in self.batches if b[1] < offset]   # a batch goes whole
        self.end = self.batches[-1][1] + 1 if self.batches else self.origin
        self.start = min(self.start, self.end)

    def truncate_fully(self, offset: int):
        self.batches, self.origin, self.start, self.end = [], offset, offset, offset

    def visible(self) -> bytes:
        return b"".join(b for base, last, b in self.batches if last >= self.start)

    def producer_view(self):
        state = {}
        for _, _, data in self.batches:
            h = parse_header(data)
            if h.producer_id >= 0:
                state[h.producer_id] = (h.producer_epoch, h.last_sequence)
        return state


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(op, min_size=1, max_size=30))
def test_log_matches_the_model(ops):
    with tempfile.TemporaryDirectory() as tmp, mock.patch("os.fsync"):
        directory = os.path.join(tmp, "p")
        log = Log.open(directory, config())
        model = Model()
        seqs = {pid: 0 for pid in PRODUCERS}
        try:
            for i, o in enumerate(ops):
                kind = o[0]
                if kind == "append":
                    _, records, size, pid = o
                    data = make_batch(records, size, producer_id=pid,
                                      producer_epoch=0 if pid >= 0 else -1,
                                      base_sequence=seqs[pid] if pid >= 0 else -1,
                                      timestamp=1000 + i, tag=i)
                    info = log.append(data)
                    assert info.base_offset == model.end
                    model.append(data)
                    if pid >= 0:
                        seqs[pid] += records
                elif kind == "truncate":
                    target = int(o[1] * model.end)
                    log.truncate_to(target)
                    model.truncate_to(target)
                elif kind == "truncate_fully":
                    target = model.end + o[1]
                    log.truncate_fully(target)
                    model.truncate_fully(target)
                elif kind == "delete_records":
                    target = model.start + int(o[1] * (model.end - model.start))
                    assert log.delete_records_before(target) == max(model.start, target)
                    model.start = max(model.start, target)
                elif kind == "roll":
                    log.roll()
                elif kind == "retention":
                    size_before = log.size_bytes
                    above_start = sum(s.size for s in log.segments
                                      if s.next_offset > model.start or s is log.segments[-1])
                    log.apply_retention(now_ms=10**12)
                    # size-based deletion never goes below retention.bytes (only segments
                    # wholly below the log start may take it lower)
                    assert log.size_bytes >= min(RETENTION_BYTES, above_start)
                    if len(log.segments) > 1:
                        assert log.size_bytes - log.segments[0].size < RETENTION_BYTES
                    assert log.size_bytes <= size_before
                    assert log.log_start_offset >= model.start
                    model.start = log.log_start_offset
                elif kind == "reopen":
                    log.close()
                    log = Log.open(directory, config())
                    assert log.recovery_report.clean
                elif kind == "crash":
                    log.abandon()
                    log = Log.open(directory, config())
                    assert log.recovery_report.bytes_truncated == 0
                # the producers' next sequence follows the surviving batches
                for pid in PRODUCERS[1:]:
                    entry = model.producer_view().get(pid)
                    if entry is not None:
                        seqs[pid] = entry[1] + 1
                assert (log.log_start_offset, log.log_end_offset) == (model.start, model.end)
                assert read_all(log) == model.visible()
                state = {pid: (e.epoch, e.last_seq) for pid, e in log.producer_state.items()}
                assert state == model.producer_view()
        finally:
            log.close()
