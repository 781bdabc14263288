"""Where a follower cuts its log when it starts following a leader (KIP-101/279), from the
leader's OffsetForLeaderEpoch answer: no network, a real log."""
from __future__ import annotations

import pytest

from gregor.broker.cluster.replica_fetcher import FollowedPartition, ReplicaFetcher
from gregor.broker.partition import Partition
from gregor.log import Log, LogConfig
from tests.log.batches import make_batch


class Manager:
    config = {"replica.fetch.backoff.ms": 1000}
    broker_id = 1


@pytest.fixture
def follower(tmp_path):
    """A follower holding offsets 0-3 from epoch 1 and 4-7 from epoch 2 (HW 4)."""
    log = Log.open(tmp_path / "t-0", LogConfig())
    p = Partition("t", 0, log, {}, 1)
    p.make_follower(0, 3, [0, 1], [0, 1], zk_version=1)
    src = Log.open(tmp_path / "src", LogConfig())
    src.append(make_batch(4), leader_epoch=1)
    src.append(make_batch(2), leader_epoch=2)
    src.append(make_batch(2), leader_epoch=2)
    p.append_as_follower(bytes(src.read(0, 1 << 20)))
    p.follower_high_watermark(4)
    src.close()
    yield p
    log.close()


def truncate(p, leader_epoch, end_offset):
    fetcher = ReplicaFetcher(Manager(), leader_id=0)
    fp = FollowedPartition(p, 3)
    fetcher._truncate_one(fp, leader_epoch, end_offset)
    assert not fp.truncate
    return p.log.log_end_offset


def test_same_epoch_ending_later_keeps_everything(follower):
    assert truncate(follower, 2, 10) == 8


def test_same_epoch_ending_earlier_cuts_there(follower):
    assert truncate(follower, 2, 6) == 6
    assert follower.log.leader_epochs.entries == [(1, 0), (2, 4)]


def test_our_latest_epoch_unknown_to_the_leader_cuts_at_the_end_of_its_epoch(follower):
    # the leader never had epoch 2: its epoch 1 ended at 5; ours ended at 4 -> cut at 4
    assert truncate(follower, 1, 5) == 4
    assert follower.log.leader_epochs.entries == [(1, 0)]


def test_no_common_epoch_falls_back_to_the_high_watermark(follower):
    assert truncate(follower, -1, -1) == 4
