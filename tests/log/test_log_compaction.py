"""Log compaction: which records survive, offsets kept, rounds, transactions, producers."""
from __future__ import annotations


from hypothesis import HealthCheck, given, settings, strategies as st

from gregor.log import LogConfig
from gregor.log.cleaner import OffsetMap
from gregor.log.cleaner.checkpoint import read_checkpoints, write_checkpoints
from gregor.log.cleaner.offset_map import ENTRY_BYTES
from gregor.protocol.records.batch import decode_batches

from tests.log.compaction_helpers import (DAY, batches, clean, keyed_batch, marker, open_log, records)


def _write(log, writes, rolls):
    """writes: [(key, value|None)] one record per batch; roll after the indexes in rolls."""
    for i, (k, v) in enumerate(writes):
        log.append(keyed_batch([(k, v)], ts=1_000 + i))
        if i in rolls:
            log.roll()


def _clean_until_done(log, buffer=1 << 20, now=10_000):
    """Passes until the dirty section is empty; returns the number of passes."""
    checkpoint, passes = None, 0
    while True:
        st_ = clean(log, checkpoint, buffer=buffer, now=now)
        if st_.end_offset < 0:
            return passes
        passes += 1
        checkpoint = st_.end_offset
        assert passes < 1000


def _expected(writes, active_base, drop_tombstones):
    latest = {}
    for off, (k, v) in enumerate(writes[:active_base]):
        latest[k] = (off, v)
    out = sorted((off, k, v) for k, (off, v) in latest.items()
                 if v is not None or not drop_tombstones)
    out += [(off, k, v) for off, (k, v) in enumerate(writes) if off >= active_base]
    return out


def test_latest_value_per_key_offsets_kept(tmp_path):
    log = open_log(tmp_path / "p-0")
    writes = [(b"a", b"1"), (b"b", b"1"), (b"a", b"2"), (b"c", b"1"), (b"b", None),
              (b"a", b"3"), (b"d", b"1")]
    _write(log, writes, rolls={1, 3, 5})
    assert _clean_until_done(log) == 1
    assert records(log) == [(3, b"c", b"1"), (4, b"b", None), (5, b"a", b"3"), (6, b"d", b"1")]
    assert len(log.segments) == 2                     # the three cleaned ones merged
    log.close()
    reopened = open_log(tmp_path / "p-0")
    assert records(reopened) == [(3, b"c", b"1"), (4, b"b", None), (5, b"a", b"3"),
                                 (6, b"d", b"1")]
    assert reopened.log_end_offset == 7
    # a read at an offset inside a gap starts at the next surviving record
    assert [r.offset for b in decode_batches(reopened.read(1, 1 << 20)) for r in b][0] == 3
    reopened.close()


def test_tombstones_go_after_delete_retention(tmp_path):
    log = open_log(tmp_path / "p-0", delete_retention_ms=DAY)
    _write(log, [(b"a", b"1"), (b"a", None), (b"b", b"1")], rolls={1})
    checkpoint = clean(log, now=10_000).end_offset
    assert records(log) == [(1, b"a", None), (2, b"b", b"1")]       # within the horizon
    clean(log, None, now=1_000 + DAY + 10)
    assert records(log) == [(2, b"b", b"1")]
    assert checkpoint == 2


def test_active_segment_and_compact_lag_are_never_cleaned(tmp_path):
    log = open_log(tmp_path / "p-0", min_compaction_lag_ms=5_000)
    _write(log, [(b"a", b"1"), (b"a", b"2"), (b"a", b"3")], rolls={0})
    assert clean(log, now=5_500).end_offset == -1       # segment 0 is too young
    assert clean(log, now=60_000).end_offset == 1       # now it is; segment 1 stays active
    assert records(log) == [(0, b"a", b"1"), (1, b"a", b"2"), (2, b"a", b"3")]


def test_delete_policy_keeps_retention_and_compact_only_skips_it(tmp_path):
    log = open_log(tmp_path / "p-0", retention_ms=1)
    _write(log, [(b"a", b"1"), (b"b", b"1")], rolls={0})
    assert log.apply_retention(now_ms=10**9) == 0
    log2 = open_log(tmp_path / "p-1", retention_ms=1, cleanup_policy="compact,delete")
    _write(log2, [(b"a", b"1"), (b"b", b"1")], rolls={0})
    assert log2.apply_retention(now_ms=10**9) >= 1


def test_config_names_and_defaults():
    cfg = LogConfig.from_dict({"cleanup.policy": "compact,delete",
                               "min.cleanable.dirty.ratio": "0.25",
                               "log.cleaner.delete.retention.ms": "5"})
    assert cfg.compact and cfg.delete and cfg.min_cleanable_dirty_ratio == 0.25
    assert cfg.delete_retention_ms == 5
    d = LogConfig()
    assert (d.cleanup_policy, d.delete_retention_ms, d.min_cleanable_dirty_ratio,
            d.min_compaction_lag_ms) == ("delete", DAY, 0.5, 0)


def test_checkpoint_file_kafka_format(tmp_path):
    write_checkpoints(tmp_path, {("t", 1): 42, ("__consumer_offsets", 7): 3})
    text = (tmp_path / "cleaner-offset-checkpoint").read_text()
    assert text == "0\n2\n__consumer_offsets 7 3\nt 1 42\n"
    assert read_checkpoints(tmp_path) == {("t", 1): 42, ("__consumer_offsets", 7): 3}
    (tmp_path / "cleaner-offset-checkpoint").write_text("0\n5\nt 1 x\n")
    assert read_checkpoints(tmp_path) == {}


def test_small_key_map_cleans_in_rounds(tmp_path):
    log = open_log(tmp_path / "p-0")
    writes = [(b"k%d" % (i % 40), b"v%d" % i) for i in range(200)] + [(b"z", b"z")]
    _write(log, writes, rolls=set(range(0, 200, 10)) | {199})
    buffer = 12 * ENTRY_BYTES                      # ~10 keys: far fewer than 40
    assert OffsetMap(buffer).capacity * ENTRY_BYTES <= buffer
    passes = _clean_until_done(log, buffer=buffer)
    assert passes > 3
    assert records(log) == _expected(writes, 200, False)


def test_aborted_transactions_go_and_markers_stay_until_the_horizon(tmp_path):
    log = open_log(tmp_path / "p-0", delete_retention_ms=DAY)
    txn = dict(producer_id=7, producer_epoch=0, transactional=True)
    log.append(keyed_batch([(b"a", b"committed")], base_sequence=0, **txn))
    log.append(marker(True, 7))
    log.append(keyed_batch([(b"a", b"aborted")], base_sequence=1, **txn))
    log.append(marker(False, 7))
    log.append(keyed_batch([(b"b", b"1")]))
    log.roll()
    log.append(keyed_batch([(b"c", b"1")]))
    clean(log, now=10_000)
    assert records(log) == [(0, b"a", b"committed"), (4, b"b", b"1"), (5, b"c", b"1")]
    assert [b.base_offset for b in batches(log) if b.is_control] == [1, 3]
    # past the horizon: the abort marker's transaction has no record left, so it goes; the
    # commit marker's transaction still has its record
    clean(log, None, now=1_000 + DAY + 10)
    assert [b.base_offset for b in batches(log) if b.is_control] == [1]
    assert log.collect_aborted_transactions(0, 10) == [(7, 2)]
    before = records(log)
    log.close()
    reopened = open_log(tmp_path / "p-0")
    assert records(reopened) == before
    assert reopened.collect_aborted_transactions(0, 10) == [(7, 2)]
    reopened.close()


def test_last_batch_of_a_producer_stays_empty_so_idempotence_survives(tmp_path):
    log = open_log(tmp_path / "p-0")
    pid = dict(producer_id=3, producer_epoch=0)
    log.append(keyed_batch([(b"a", b"1")], base_sequence=0, **pid))
    log.append(keyed_batch([(b"a", b"2")], base_sequence=1, **pid))
    log.roll()
    log.append(keyed_batch([(b"a", b"3")]))        # a non-idempotent write supersedes both
    log.roll()
    log.append(keyed_batch([(b"z", b"1")]))
    clean(log, now=10_000)
    kept = [b for b in batches(log) if b.producer_id == 3]
    assert [(b.base_offset, b.base_sequence, len(b)) for b in kept] == [(1, 1, 0)]
    log.close()
    reopened = open_log(tmp_path / "p-0")
    assert reopened.producer_state[3].last_seq == 1
    dup = reopened.append(keyed_batch([(b"a", b"2")], base_sequence=1, **pid))
    assert dup.duplicate and dup.base_offset == 1
    nxt = reopened.append(keyed_batch([(b"a", b"4")], base_sequence=2, **pid))
    assert not nxt.duplicate and nxt.base_offset == 4
    reopened.close()


keys = st.sampled_from([b"a", b"b", b"c", b"d", b"e", b"f"])
writes_st = st.lists(st.tuples(keys, st.one_of(st.none(), st.binary(min_size=0, max_size=6))),
                     min_size=1, max_size=60)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(writes=writes_st, data=st.data())
def test_compacted_log_is_latest_value_per_key(tmp_path_factory, writes, data):
    """For any writes, rolls and key-map size: the log read back is the latest record per key
    below the active segment (tombstones dropped once past delete.retention.ms), then the
    active segment as written, each record at its original offset."""
    directory = tmp_path_factory.mktemp("prop") / "p-0"
    rolls = set(data.draw(st.lists(st.integers(0, len(writes) - 1), max_size=20)))
    drop = data.draw(st.booleans())
    buffer = data.draw(st.sampled_from([3 * ENTRY_BYTES, 8 * ENTRY_BYTES, 1 << 20]))
    segment_bytes = data.draw(st.sampled_from([200, 1 << 20]))
    log = open_log(directory, segment_bytes=segment_bytes)
    _write(log, writes, rolls)
    active = log.active_segment.base_offset
    now = 10**9 if drop else 10_000
    log.config = LogConfig(**{**_cfg(log.config), "delete_retention_ms": 0 if drop else DAY})
    _clean_until_done(log, buffer=buffer, now=now)
    expected = _expected(writes, active, drop)
    assert records(log) == expected
    assert log.log_end_offset == len(writes)
    log.close()
    reopened = open_log(directory, segment_bytes=segment_bytes)
    assert records(reopened) == expected
    reopened.close()


def _cfg(c: LogConfig) -> dict:
    return {f: getattr(c, f) for f in c.__dataclass_fields__}
