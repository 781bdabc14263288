import os

import pytest

from gregor.log.producer_state import ProducerStateManager
from gregor.protocol.errors import (InvalidProducerEpochError, InvalidTxnStateError,
                                    OutOfOrderSequenceNumberError, UnknownProducerIdError)
from gregor.protocol.records.header import (CONTROL_BIT, TRANSACTIONAL_BIT, BatchHeader)

INT32_MAX = (1 << 31) - 1


def hdr(pid, epoch, seq, records=1, offset=0, ts=100, attributes=0):
    return BatchHeader(base_offset=offset, batch_length=100, partition_leader_epoch=0, magic=2,
                       crc=0, attributes=attributes, last_offset_delta=records - 1,
                       base_timestamp=ts, max_timestamp=ts, producer_id=pid,
                       producer_epoch=epoch, base_sequence=seq, records_count=records)


class Appender:
    """Drives the manager the way Log.append does."""

    def __init__(self, manager):
        self.m = manager
        self.offset = 0

    def append(self, pid, epoch, seq, records=1, attributes=0):
        h = hdr(pid, epoch, seq, records, self.offset, attributes=attributes)
        dup = self.m.find_duplicate(h)
        if dup is not None:
            return dup
        staged = self.m.stage([h], validate=True)
        self.m.commit(staged)
        self.offset += records
        return None


@pytest.fixture
def app(tmp_path):
    return Appender(ProducerStateManager(str(tmp_path)))


def test_in_sequence_batches_are_accepted_and_remembered(app):
    app.append(1, 0, 0, records=3)
    app.append(1, 0, 3, records=2)
    e = app.m[1]
    assert (e.epoch, e.first_seq, e.last_seq, e.last_offset) == (0, 0, 4, 4)


def test_retry_of_one_of_the_last_five_is_a_duplicate_with_original_offsets(app):
    for i in range(7):
        app.append(1, 0, i * 2, records=2)
    dup = app.append(1, 0, 6, records=2)           # 4th batch: still among the last 5
    assert (dup.first_offset, dup.last_offset) == (6, 7)
    assert app.offset == 14                         # nothing appended
    with pytest.raises(OutOfOrderSequenceNumberError):
        app.append(1, 0, 2, records=2)              # 2nd batch: forgotten, now out of order


def test_gap_is_out_of_order_and_leaves_no_trace(app):
    app.append(1, 0, 0)
    with pytest.raises(OutOfOrderSequenceNumberError, match="expected 1"):
        app.append(1, 0, 5)
    assert app.m[1].last_seq == 0
    app.append(1, 0, 1)


def test_older_epoch_is_fenced(app):
    app.append(1, 3, 0)
    with pytest.raises(InvalidProducerEpochError):
        app.append(1, 2, 1)


def test_new_epoch_must_start_at_zero(app):
    app.append(1, 0, 0, records=5)
    with pytest.raises(OutOfOrderSequenceNumberError, match="must start at sequence 0"):
        app.append(1, 1, 5)
    app.append(1, 1, 0)
    assert (app.m[1].epoch, app.m[1].last_seq) == (1, 0)


def test_unknown_producer_may_start_anywhere_like_current_kafka(app):
    app.append(9, 0, 42)
    assert app.m[9].last_seq == 42
    app.append(9, 0, 43)


def test_unknown_producer_strict_mode(tmp_path):
    a = Appender(ProducerStateManager(str(tmp_path), reject_unknown_sequence=True))
    with pytest.raises(UnknownProducerIdError):
        a.append(9, 0, 42)
    a.append(9, 0, 0)


def test_sequence_wraps_after_int32_max(app):
    app.append(1, 0, INT32_MAX - 1, records=2)      # last seq = INT32_MAX
    assert app.m[1].last_seq == INT32_MAX
    app.append(1, 0, 0)


def test_several_batches_of_one_producer_in_one_append_are_checked_in_order(tmp_path):
    m = ProducerStateManager(str(tmp_path))
    staged = m.stage([hdr(1, 0, 0, 2, 0), hdr(1, 0, 2, 2, 2)], validate=True)
    m.commit(staged)
    assert m[1].last_seq == 3
    with pytest.raises(OutOfOrderSequenceNumberError):
        m.stage([hdr(1, 0, 4, 1, 4), hdr(1, 0, 9, 1, 5)], validate=True)
    assert m[1].last_seq == 3


def test_transactions_track_first_offset_and_end_with_a_marker(app):
    app.append(1, 0, 0, records=2, attributes=TRANSACTIONAL_BIT)
    app.append(1, 0, 2, attributes=TRANSACTIONAL_BIT)
    assert app.m.first_unstable_offset() == 0
    with pytest.raises(InvalidTxnStateError):
        app.append(1, 0, 3)                         # non-transactional inside a transaction
    app.append(1, 0, -1, attributes=TRANSACTIONAL_BIT | CONTROL_BIT)
    assert app.m.first_unstable_offset() is None
    assert app.m[1].last_seq == 2                   # markers do not consume sequences


def test_replay_skips_validation(tmp_path):
    m = ProducerStateManager(str(tmp_path))
    m.replay(hdr(1, 5, 10))
    m.replay(hdr(1, 4, 99))                         # a replica copies what the leader wrote
    assert (m[1].epoch, m[1].last_seq) == (4, 99)


def test_snapshot_round_trip_and_selection(tmp_path):
    a = Appender(ProducerStateManager(str(tmp_path)))
    for pid in (1, 2):
        for i in range(7):
            a.append(pid, 3, i)
    a.m.take_snapshot(10)
    a.append(1, 3, 7)
    a.m.take_snapshot(20)
    m = ProducerStateManager(str(tmp_path))
    assert m.load_latest_snapshot(19) == 10
    assert m[1].last_seq == 6 and len(m[1].batches) == 5
    assert m.load_latest_snapshot(10**9) == 20
    assert {pid: list(e.batches) for pid, e in m.items()} == \
           {pid: list(e.batches) for pid, e in a.m.items()}
    m.delete_snapshots_after(15)
    assert m.snapshot_offsets() == [10]


def test_corrupt_snapshot_is_ignored_and_removed(tmp_path):
    a = Appender(ProducerStateManager(str(tmp_path)))
    a.append(1, 0, 0)
    a.m.take_snapshot(5)
    a.m.take_snapshot(8)
    path = tmp_path / f"{8:020d}.snapshot"
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    m = ProducerStateManager(str(tmp_path))
    assert m.load_latest_snapshot(100) == 5
    assert not os.path.exists(path)
    (tmp_path / f"{5:020d}.snapshot").write_bytes(b"GPS1")     # truncated
    assert m.load_latest_snapshot(100) is None and len(m) == 0


def test_idle_producers_expire_unless_a_transaction_is_open(tmp_path):
    m = ProducerStateManager(str(tmp_path))
    m.commit(m.stage([hdr(1, 0, 0, ts=1_000)], validate=True))
    m.commit(m.stage([hdr(2, 0, 0, ts=1_000, attributes=TRANSACTIONAL_BIT)], validate=True))
    m.commit(m.stage([hdr(3, 0, 0, ts=5_000)], validate=True))
    assert m.remove_expired(now_ms=6_000, expiration_ms=4_000) == [1]
    assert 1 not in m and 2 in m and 3 in m
