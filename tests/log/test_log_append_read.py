import pytest

from gregor.log import AppendOffsetError, Log, LogConfig
from gregor.protocol.errors import (CorruptMessageError, InvalidProducerEpochError,
                                    MessageTooLargeError, OffsetOutOfRangeError,
                                    OutOfOrderSequenceNumberError, RecordListTooLargeError)
from gregor.protocol.records.header import crc_ok, iter_headers, parse_header
from tests.log.batches import make_batch, read_all, split_batches

CFG = LogConfig(flush_rolled_in_background=False, index_interval_bytes=100)


@pytest.fixture
def log(tmp_path):
    lg = Log.open(tmp_path / "t-0", CFG)
    yield lg
    lg.close()


def test_append_assigns_offsets_and_reports_them(log):
    a = log.append(make_batch(3))
    b = log.append(make_batch(2))
    assert (a.base_offset, a.last_offset, a.duplicate) == (0, 2, False)
    assert (b.base_offset, b.last_offset, b.log_append_time_ms) == (3, 4, -1)
    assert b.log_start_offset == 0 and b.record_count == 2
    assert log.log_end_offset == 5
    stored = split_batches(read_all(log))
    assert [parse_header(x).base_offset for x in stored] == [0, 3]
    assert all(crc_ok(x, 0, parse_header(x)) for x in stored)


def test_bytearray_is_patched_in_place_and_several_batches_append_at_once(log):
    log.append(make_batch(1))
    data = bytearray(make_batch(2) + make_batch(4))
    info = log.append(data)
    assert (info.base_offset, info.last_offset) == (1, 6)
    assert [h.base_offset for _, h in iter_headers(data)] == [1, 3]
    assert read_all(log, 1) == bytes(data)


def test_a_memoryview_of_a_request_is_appended_without_changing_it(log):
    # the broker appends produce records as a view into the request frame
    log.append(make_batch(1))
    batches = make_batch(2) + make_batch(4)
    frame = b"request header" + batches + b"more of the request"
    view = memoryview(frame)[14:14 + len(batches)]
    info = log.append(view)
    assert (info.base_offset, info.last_offset) == (1, 6)
    assert bytes(view) == batches                   # the frame itself is left alone
    stored = split_batches(read_all(log, 1))
    assert [parse_header(x).base_offset for x in stored] == [1, 3]
    assert all(crc_ok(x, 0, parse_header(x)) for x in stored)
    stamped = log.append(memoryview(frame)[14:14 + len(batches)],
                         timestamp_type="LogAppendTime", now_ms=99)
    assert stamped.log_append_time_ms == 99 and bytes(view) == batches


def test_log_append_time(log):
    info = log.append(make_batch(2, timestamp=5), timestamp_type="LogAppendTime", now_ms=777)
    assert info.log_append_time_ms == 777
    h = parse_header(log.read(0, 1000))
    assert h.log_append_time and h.max_timestamp == 777
    assert crc_ok(log.read(0, 1000), 0, h)


def test_config_timestamp_type_is_the_default(tmp_path):
    lg = Log.open(tmp_path / "p", LogConfig(message_timestamp_type="LogAppendTime"))
    assert lg.append(make_batch(1), now_ms=42).log_append_time_ms == 42
    lg.close()


def test_bad_input_is_rejected_and_nothing_is_written(log):
    with pytest.raises(CorruptMessageError):
        log.append(b"")
    with pytest.raises(CorruptMessageError):
        log.append(make_batch(1)[:-1])
    with pytest.raises(CorruptMessageError):
        log.append(b"\x00" * 70)
    assert log.log_end_offset == 0 and log.size_bytes == 0


def test_size_limits(tmp_path):
    lg = Log.open(tmp_path / "p", LogConfig(max_message_bytes=500, segment_bytes=1000))
    with pytest.raises(MessageTooLargeError, match="max.message.bytes"):
        lg.append(make_batch(1, 600))
    with pytest.raises(RecordListTooLargeError):
        lg.append(make_batch(1, 400) * 3)
    assert lg.log_end_offset == 0
    lg.close()


def test_read_returns_whole_batches_within_max_bytes(log):
    sizes = []
    for i in range(10):
        b = make_batch(2, 100, tag=i)
        sizes.append(len(b))
        log.append(b)
    one = sizes[0]
    assert len(log.read(0, one)) == one
    assert len(log.read(0, one * 3 + 5)) == one * 3
    assert len(log.read(1, one * 2)) == one * 2          # offset 1 is inside the first batch
    assert parse_header(log.read(5, 10_000)).base_offset == 4
    assert len(log.read(0, 10)) == one                    # at least one whole batch
    assert log.read(0, 10, min_one_batch=False) == b""
    assert log.read(20, 100) == b""                       # at the end
    with pytest.raises(OffsetOutOfRangeError):
        log.read(21, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 100)


def test_read_stops_before_max_offset(log):
    for i in range(5):
        log.append(make_batch(2, tag=i))
    data = log.read(0, 1 << 20, max_offset=6)
    assert [h.base_offset for _, h in iter_headers(data)] == [0, 2, 4]
    # a batch straddling max_offset is not returned
    data = log.read(0, 1 << 20, max_offset=5)
    assert [h.base_offset for _, h in iter_headers(data)] == [0, 2]
    assert log.read(6, 1 << 20, max_offset=6) == b""


def test_read_of_active_segment_sees_only_whole_appended_batches(log):
    log.append(make_batch(1, tag=1))
    first = log.read(0, 1 << 20)
    log.append(make_batch(1, tag=2))
    assert log.read(0, 1 << 20)[:len(first)] == first
    assert len(split_batches(log.read(0, 1 << 20))) == 2


def test_producer_rules_through_the_log(log):
    a = log.append(make_batch(2, producer_id=5, producer_epoch=0, base_sequence=0))
    retry = log.append(make_batch(2, producer_id=5, producer_epoch=0, base_sequence=0))
    assert retry.duplicate and (retry.base_offset, retry.last_offset) == (a.base_offset,
                                                                         a.last_offset)
    assert log.log_end_offset == 2
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append(make_batch(1, producer_id=5, producer_epoch=0, base_sequence=5))
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append(make_batch(1, producer_id=5, producer_epoch=1, base_sequence=2))
    log.append(make_batch(1, producer_id=5, producer_epoch=1, base_sequence=0))
    with pytest.raises(InvalidProducerEpochError):
        log.append(make_batch(1, producer_id=5, producer_epoch=0, base_sequence=2))
    assert log.log_end_offset == 3
    assert (log.producer_state[5].epoch, log.producer_state[5].last_seq) == (1, 0)


def test_rejected_multi_batch_append_writes_nothing(log):
    log.append(make_batch(1, producer_id=5, producer_epoch=0, base_sequence=0))
    data = (make_batch(1, producer_id=5, producer_epoch=0, base_sequence=1)
            + make_batch(1, producer_id=5, producer_epoch=0, base_sequence=7))
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append(data)
    assert log.log_end_offset == 1 and log.producer_state[5].last_seq == 0


def test_replicated_append_keeps_offsets_and_skips_sequence_checks(tmp_path, log):
    log.append(make_batch(2, producer_id=5, producer_epoch=0, base_sequence=0))
    follower = Log.open(tmp_path / "follower", CFG)
    follower.append(log.read(0, 1 << 20), assign_offsets=False)
    assert follower.log_end_offset == 2
    assert follower.producer_state[5].last_seq == 1
    with pytest.raises(AppendOffsetError):
        follower.append(log.read(0, 1 << 20), assign_offsets=False)
    follower.close()


def test_bytes_are_not_modified_but_stored_with_new_offsets(log):
    log.append(make_batch(1))
    data = make_batch(2, tag=1) + make_batch(3, tag=2)
    original = bytes(data)
    info = log.append(data)
    assert data == original                               # the caller's bytes are untouched
    stored = log.read(1, 1 << 20)
    assert [h.base_offset for _, h in iter_headers(stored)] == [1, 3]
    # apart from the 8-byte base offsets, the stored batches are the given bytes
    first = len(split_batches(original)[0])
    assert stored[8:first] == original[8:first]
    assert stored[first + 8:] == original[first + 8:]
    assert (info.base_offset, info.last_offset) == (1, 5)


def test_duplicate_under_log_append_time_reports_the_original_time(log):
    batch = make_batch(1, producer_id=3, producer_epoch=0, base_sequence=0)
    first = log.append(batch, timestamp_type="LogAppendTime", now_ms=500)
    retry = log.append(batch, timestamp_type="LogAppendTime", now_ms=900)
    assert retry.duplicate and retry.log_append_time_ms == first.log_append_time_ms == 500


def test_failed_write_raises_storage_error_and_leaves_the_log_consistent(log, monkeypatch):
    import errno
    import os

    from gregor.protocol.errors import KafkaStorageError
    log.append(make_batch(1, tag=1))

    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")
    with monkeypatch.context() as m:
        m.setattr(os, "pwrite", full)
        m.setattr(os, "pwritev", full)
        with pytest.raises(KafkaStorageError, match="No space left"):
            log.append(make_batch(1, tag=2))
    assert log.log_end_offset == 1
    log.append(make_batch(1, tag=3))
    assert [h.base_offset for _, h in iter_headers(read_all(log))] == [0, 1]


def test_more_batches_in_one_append_than_one_pwritev_takes(log):
    data = b"".join(make_batch(1, 3, tag=i) for i in range(700))    # 1400 buffers > IOV_MAX
    info = log.append(data)
    assert (info.base_offset, info.last_offset) == (0, 699)
    stored = read_all(log)
    assert [h.base_offset for _, h in iter_headers(stored)] == list(range(700))
    assert all(crc_ok(stored, pos, h) for pos, h in iter_headers(stored))
