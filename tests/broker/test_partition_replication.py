"""A partition's replication bookkeeping without I/O beyond its log: the leader's view of its
followers, the high watermark over the (maximal) ISR, ISR shrink and expansion, followers
taking the leader's high watermark, acks=all completion."""
from __future__ import annotations

import pytest

from gregor.broker.follower_state import FollowerState
from gregor.broker.partition import Partition
from gregor.log import Log, LogConfig
from tests.log.batches import make_batch

ME, F1, F2 = 0, 1, 2
LAG = 10_000


@pytest.fixture
def leader(tmp_path):
    p = Partition("t", 0, Log.open(tmp_path / "t-0", LogConfig()), {"min.insync.replicas": 2}, ME)
    p.make_leader(3, [ME, F1, F2], [ME, F1, F2], zk_version=7, now_ms=0)
    yield p
    p.log.close()


def append(p: Partition, n: int = 1) -> int:
    return p.append_records_to_leader(make_batch(n), -1, 0).last_offset + 1


def test_follower_state_caught_up_rule():
    f = FollowerState(now_ms=0)
    f.update(fetch_offset=10, leader_leo=10, now_ms=100)      # asks for the log end
    assert f.last_caught_up_ms == 100
    f.update(fetch_offset=10, leader_leo=20, now_ms=200)      # had all the leader had at 100
    assert f.last_caught_up_ms == 100
    f.update(fetch_offset=15, leader_leo=30, now_ms=300)      # behind what the leader had at 200
    assert f.last_caught_up_ms == 100
    f.update(fetch_offset=30, leader_leo=40, now_ms=400)      # has what the leader had at 300
    assert f.last_caught_up_ms == 300 and f.log_end_offset == 30


def test_high_watermark_is_the_smallest_log_end_of_the_isr(leader):
    end = append(leader, 5)
    assert leader.log.log_end_offset == end == 5
    assert leader.high_watermark == 0                 # followers' positions unknown yet
    assert leader.check_enough_replicas_reach_offset(end) == (False, 0)
    assert not leader.update_follower(F1, 5, now_ms=10)
    assert leader.high_watermark == 0                 # F2 has not fetched
    assert leader.update_follower(F2, 3, now_ms=10)
    assert leader.high_watermark == 3
    assert leader.update_follower(F2, 5, now_ms=20)
    assert leader.high_watermark == 5
    assert leader.check_enough_replicas_reach_offset(end) == (True, 0)


def test_a_lagging_follower_leaves_the_isr_and_the_hw_moves_once_that_is_written(leader):
    append(leader, 4)
    leader.update_follower(F1, 4, now_ms=100)
    leader.update_follower(F2, 1, now_ms=100)
    assert leader.high_watermark == 1
    assert leader.isr_change(now_ms=LAG - 1, lag_ms=LAG) is None
    new = leader.isr_change(now_ms=LAG + 50, lag_ms=LAG)
    assert new == [ME, F1]
    leader.pending_isr = new                         # the write is under way: HW still waits
    assert not leader.maybe_advance_high_watermark()
    leader.pending_isr, leader.isr = None, new       # written
    assert leader.maybe_advance_high_watermark() and leader.high_watermark == 4


def test_a_caught_up_follower_rejoins_and_counts_for_the_hw_while_the_write_runs(leader):
    leader.isr = [ME, F1]
    append(leader, 4)
    leader.update_follower(F1, 4, now_ms=10)
    assert leader.high_watermark == 4
    leader.update_follower(F2, 2, now_ms=10)
    assert leader.isr_change(now_ms=20, lag_ms=LAG) is None    # not up to the HW yet
    leader.update_follower(F2, 4, now_ms=30)
    # the periodic check only shrinks: a follower rejoins on the news of its own fetch
    # (its last known state may be from before it was cut off)
    assert leader.isr_change(now_ms=30, lag_ms=LAG, expand=False) is None
    new = leader.isr_change(now_ms=30, lag_ms=LAG)
    assert sorted(new) == [ME, F1, F2]
    leader.pending_isr = new
    append(leader, 2)
    leader.update_follower(F1, 6, now_ms=40)
    # maximal ISR: F2 (being added) has not got offsets 4-5, so they are not committed yet
    assert leader.high_watermark == 4
    leader.update_follower(F2, 6, now_ms=41)
    assert leader.high_watermark == 6


def test_an_isr_below_min_insync_refuses_acks_all_and_reports_after_append(leader):
    from gregor.protocol.errors import NotEnoughReplicasError
    leader.isr = [ME]
    with pytest.raises(NotEnoughReplicasError):
        append(leader)
    assert leader.log.log_end_offset == 0            # nothing appended
    leader.isr = [ME, F1]
    end = append(leader)
    leader.update_follower(F1, end, now_ms=5)
    leader.isr = [ME]                                 # shrunk after the append
    assert leader.check_enough_replicas_reach_offset(end) == (True, 20)   # _AFTER_APPEND


def test_a_follower_takes_the_leaders_hw_capped_by_its_own_log(tmp_path):
    p = Partition("t", 0, Log.open(tmp_path / "t-0", LogConfig()), {}, F1)
    assert p.make_follower(ME, 3, [ME, F1], [ME, F1], zk_version=1)
    assert not p.make_follower(ME, 3, [ME, F1], [ME, F1], zk_version=2)   # nothing new
    leader_log = Log.open(tmp_path / "leader", LogConfig())
    leader_log.append(make_batch(3), leader_epoch=3)
    p.append_as_follower(bytes(leader_log.read(0, 1 << 20)))
    assert p.high_watermark == 0                      # appending never moves a follower's HW
    assert p.follower_high_watermark(10) and p.high_watermark == 3
    assert p.log.leader_epochs.entries == [(3, 0)]
    leader_log.close()
    p.log.close()


def test_becoming_leader_starts_the_epoch_at_the_log_end(tmp_path):
    p = Partition("t", 0, Log.open(tmp_path / "t-0", LogConfig()), {}, ME)
    p.make_follower(F1, 1, [F1, ME], [F1, ME], zk_version=1)
    src = Log.open(tmp_path / "src", LogConfig())
    src.append(make_batch(4), leader_epoch=1)
    p.append_as_follower(bytes(src.read(0, 1 << 20)))
    assert p.make_leader(2, [ME], [F1, ME], zk_version=2, now_ms=0)
    assert p.log.leader_epochs.entries == [(1, 0), (2, 4)]
    assert p.high_watermark == 4                      # ISR [ME]: the log end is committed
    assert p.log.leader_epochs.end_offset_for(1, p.log.log_end_offset) == (1, 4)
    src.close()
    p.log.close()


def test_acks_all_waits_for_the_leaders_fsync_only_when_no_follower_has_the_record(leader):
    leader.wait_for_durable = True                   # gregor.fsync.acks.all
    end = append(leader, 2)
    leader.update_follower(F1, end, now_ms=1)
    leader.update_follower(F2, end, now_ms=1)
    assert leader.durable_offset < end
    assert leader.check_enough_replicas_reach_offset(end) == (True, 0)   # on three replicas
    leader.isr = [ME]
    leader.config = {}                                # min.insync.replicas 1
    end = append(leader, 1)
    assert leader.high_watermark == end
    assert leader.check_enough_replicas_reach_offset(end) == (False, 0)  # the only copy
    assert leader.mark_durable(end)
    assert leader.check_enough_replicas_reach_offset(end) == (True, 0)


def test_a_leader_that_becomes_follower_fails_its_waiting_acks_all_writes(leader):
    end = append(leader, 2)
    assert leader.check_enough_replicas_reach_offset(end) == (False, 0)
    leader.make_follower(F1, 4, [F1, F2], [ME, F1, F2], zk_version=8)
    leader.follower_high_watermark(end)      # even if the new leader's HW passes the offset
    assert leader.check_enough_replicas_reach_offset(end) == (True, 6)   # NOT_LEADER_OR_FOLLOWER
