"""The leader epoch cache (KIP-101/279) and the log's use of it: batches stamped with the
leader's epoch, the cache learning epochs from appended batches, truncation and restarts."""
from __future__ import annotations

from gregor.log import Log, LogConfig
from gregor.log.leader_epoch import FILE_NAME, LeaderEpochCache
from gregor.protocol.records.header import parse_header, set_partition_leader_epoch

from tests.log.batches import make_batch


def cache(entries, tmp_path=None):
    c = LeaderEpochCache(tmp_path)
    for e, o in entries:
        c.assign(e, o)
    return c


def test_assign_keeps_increasing_epochs_only():
    c = cache([(0, 0), (2, 10)])
    assert not c.assign(1, 20) and not c.assign(2, 30) and not c.assign(-1, 40)
    assert c.assign(5, 40)
    assert c.entries == [(0, 0), (2, 10), (5, 40)]


def test_a_new_epoch_at_or_below_an_entry_start_supersedes_it():
    # an entry at offset 40 the log no longer has (truncated without telling the cache)
    c = cache([(0, 0), (2, 40)])
    c.assign(3, 30)
    assert c.entries == [(0, 0), (3, 30)]


def test_end_offset_for_follows_kip_279():
    c = cache([(1, 0), (3, 100), (6, 250)])
    assert c.end_offset_for(6, 300) == (6, 300)       # the latest epoch: the log end
    assert c.end_offset_for(3, 300) == (3, 250)       # ends where epoch 6 begins
    assert c.end_offset_for(4, 300) == (3, 250)       # unknown epoch: the largest below it
    assert c.end_offset_for(2, 300) == (1, 100)
    assert c.end_offset_for(0, 300) == (-1, -1)       # older than anything known
    assert c.end_offset_for(-1, 300) == (-1, -1)
    assert c.end_offset_for(9, 300) == (6, 300)       # newer than ours: our latest's end
    assert LeaderEpochCache(None).end_offset_for(0, 5) == (-1, -1)


def test_truncation_drops_entries_from_the_new_end(tmp_path):
    c = cache([(1, 0), (3, 100), (6, 250)], tmp_path)
    c.truncate_from_end(250)
    assert c.entries == [(1, 0), (3, 100)]
    c.truncate_from_end(101)
    assert c.entries == [(1, 0), (3, 100)]
    assert LeaderEpochCache(tmp_path).entries == [(1, 0), (3, 100)]


def test_checkpoint_file_is_kafkas_text_format_and_bad_files_read_as_empty(tmp_path):
    cache([(0, 0), (4, 17)], tmp_path)
    assert (tmp_path / FILE_NAME).read_text() == "0\n2\n0 0\n4 17\n"
    assert LeaderEpochCache(tmp_path).entries == [(0, 0), (4, 17)]
    for bad in ("", "1\n1\n0 0\n", "0\n3\n0 0\n", "0\n2\n4 0\n2 5\n", "0\nx\n"):
        (tmp_path / FILE_NAME).write_text(bad)
        assert LeaderEpochCache(tmp_path).entries == []


def test_leader_appends_stamp_the_epoch_and_the_cache_learns_it(tmp_path):
    log = Log.open(tmp_path / "p", LogConfig())
    log.append(make_batch(3), leader_epoch=0)                  # bytes: spliced on write
    log.append(bytearray(make_batch(2)), leader_epoch=0)       # bytearray: patched in place
    log.append(make_batch(1), leader_epoch=4)
    data = log.read(0, 1 << 20)
    epochs, pos = [], 0
    while pos < len(data):
        h = parse_header(data, pos)
        epochs.append((h.base_offset, h.partition_leader_epoch))
        pos += h.size
    assert epochs == [(0, 0), (3, 0), (5, 4)]
    assert log.leader_epochs.entries == [(0, 0), (4, 5)]
    log.close()
    reopened = Log.open(tmp_path / "p", LogConfig())
    assert reopened.leader_epochs.entries == [(0, 0), (4, 5)]
    reopened.truncate_to(5)
    assert reopened.leader_epochs.entries == [(0, 0)]
    reopened.close()


def test_a_follower_learns_epochs_from_replicated_batches(tmp_path):
    leader = Log.open(tmp_path / "leader", LogConfig())
    leader.append(make_batch(2), leader_epoch=1)
    leader.append(make_batch(2), leader_epoch=3)
    follower = Log.open(tmp_path / "follower", LogConfig())
    follower.append(bytes(leader.read(0, 1 << 20)), assign_offsets=False)
    assert follower.leader_epochs.entries == [(1, 0), (3, 2)]
    assert bytes(follower.read(0, 1 << 20)) == bytes(leader.read(0, 1 << 20))
    leader.close()
    follower.close()


def test_unstamped_batches_teach_nothing(tmp_path):
    log = Log.open(tmp_path / "p", LogConfig())
    batch = bytearray(make_batch(1))
    set_partition_leader_epoch(batch, 0, -1)    # as Java and librdkafka producers send it
    log.append(batch)
    assert parse_header(log.read(0, 1 << 20), 0).partition_leader_epoch == -1
    assert log.leader_epochs.entries == []
    log.close()
