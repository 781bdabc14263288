"""The share-partition state machine without I/O: acquisition, acknowledgement types,
delivery counts, locks, the in-flight cap, control batches, restore."""
import pytest

from gregor.broker.share.partition_state import (ACCEPT, ACKNOWLEDGED, ACQUIRED, ARCHIVED,
                                                 AVAILABLE, GAP, REJECT, RELEASE, RENEW,
                                                 AckError, SharePartition)

LOCK = 30_000


def log_of(*batches):
    """batches(offset) over (base, last, control) tuples, like the broker's log reader."""
    def batches_from(offset):
        for b in batches:
            if b[1] >= offset:
                yield b
    return batches_from


LOG = log_of((0, 4, False), (5, 9, False))


def ranges(acquired):
    return [(a.first_offset, a.last_offset, a.delivery_count) for a in acquired]


def test_acquire_takes_whole_batches_and_hands_each_record_once():
    sp = SharePartition(0)
    assert ranges(sp.acquire("a", 3, LOG, 0, LOCK)) == [(0, 4, 1)]     # whole first batch
    assert ranges(sp.acquire("b", 100, LOG, 0, LOCK)) == [(5, 9, 1)]
    assert sp.acquire("c", 100, LOG, 0, LOCK) == []
    assert sp.owner_of(2) == "a" and sp.owner_of(7) == "b"


def test_strict_limit_splits_a_batch():
    sp = SharePartition(0)
    assert ranges(sp.acquire("a", 3, LOG, 0, LOCK, strict=True)) == [(0, 2, 1)]
    assert ranges(sp.acquire("b", 3, LOG, 0, LOCK, strict=True)) == [(3, 5, 1)]


def test_accept_moves_the_start_offset_and_a_gap_in_the_middle_holds_it():
    sp = SharePartition(0)
    sp.acquire("a", 10, LOG, 0, LOCK)
    sp.acknowledge("a", 0, 2, [ACCEPT])
    assert sp.start_offset == 3
    sp.acknowledge("a", 5, 9, [ACCEPT])
    assert sp.start_offset == 3                 # 3 and 4 are still acquired
    sp.acknowledge("a", 3, 4, [GAP, REJECT])
    assert sp.start_offset == 10 and sp.in_flight() == 0


def test_release_makes_records_available_again_with_a_higher_delivery_count():
    sp = SharePartition(0)
    sp.acquire("a", 10, LOG, 0, LOCK)
    sp.acknowledge("a", 0, 9, [RELEASE])
    assert sp.state_of(0) == (AVAILABLE, 1)
    assert ranges(sp.acquire("b", 10, LOG, 0, LOCK)) == [(0, 9, 2)]


def test_per_offset_types():
    sp = SharePartition(0)
    sp.acquire("a", 5, LOG, 0, LOCK)
    sp.acknowledge("a", 0, 4, [ACCEPT, RELEASE, REJECT, ACCEPT, RELEASE])
    assert [sp.state_of(o)[0] if sp.state_of(o) else None for o in range(5)] == \
        [None, AVAILABLE, ARCHIVED, ACKNOWLEDGED, AVAILABLE]
    assert sp.start_offset == 1


def test_delivery_count_limit_archives_on_the_last_release():
    sp = SharePartition(0, delivery_count_limit=2)
    for _ in range(2):
        sp.acquire("a", 5, log_of((0, 0, False)), 0, LOCK)
        sp.acknowledge("a", 0, 0, [RELEASE])
    assert sp.start_offset == 1 and sp.archived_total == 1
    assert sp.acquire("a", 5, log_of((0, 0, False)), 0, LOCK) == []


def test_wrong_member_expired_lock_and_finished_records_are_invalid_record_state():
    sp = SharePartition(0)
    sp.acquire("a", 5, LOG, 0, LOCK)
    for member, first, last in (("b", 0, 0), ("a", 0, 7), ("nobody", 1, 1)):
        with pytest.raises(AckError) as e:
            sp.acknowledge(member, first, last, [ACCEPT])
        assert e.value.code == 121
    assert sp.state_of(0) == (ACQUIRED, 1)      # nothing changed
    sp.acknowledge("a", 0, 0, [ACCEPT])
    with pytest.raises(AckError):
        sp.acknowledge("a", 0, 0, [ACCEPT])      # below the start now
    assert sp.expire_locks(LOCK) == 4
    with pytest.raises(AckError) as e:
        sp.acknowledge("a", 1, 1, [ACCEPT])
    assert e.value.code == 121


def test_malformed_batches_are_invalid_request():
    sp = SharePartition(0)
    sp.acquire("a", 5, LOG, 0, LOCK)
    for first, last, types in ((3, 1, [ACCEPT]), (0, 4, [ACCEPT, ACCEPT]), (0, 0, [9]),
                               (0, 0, [RENEW])):
        with pytest.raises(AckError) as e:
            sp.acknowledge("a", first, last, types)
        assert e.value.code == 42


def test_lock_expiry_and_renew():
    sp = SharePartition(0)
    sp.acquire("a", 5, LOG, 1000, LOCK)
    assert sp.next_deadline() == 1000 + LOCK
    sp.acknowledge("a", 0, 1, [RENEW], now_ms=20_000, lock_ms=LOCK, allow_renew=True)
    assert sp.expire_locks(1000 + LOCK) == 3
    assert sp.state_of(0) == (ACQUIRED, 1) and sp.state_of(2) == (AVAILABLE, 1)
    assert sp.next_deadline() == 20_000 + LOCK


def test_release_member_gives_back_only_its_records():
    sp = SharePartition(0)
    sp.acquire("a", 5, LOG, 0, LOCK)
    sp.acquire("b", 5, LOG, 0, LOCK)
    assert sp.release_member("a") == 5
    assert sp.owner_of(6) == "b" and sp.state_of(0) == (AVAILABLE, 1)


def test_in_flight_cap_stops_new_records_until_the_start_moves():
    sp = SharePartition(0, max_record_locks=4)
    big = log_of((0, 1, False), (2, 3, False), (4, 5, False))
    assert ranges(sp.acquire("a", 100, big, 0, LOCK)) == [(0, 3, 1)]
    assert sp.acquire("b", 100, big, 0, LOCK) == []
    sp.acknowledge("a", 0, 1, [ACCEPT])
    assert ranges(sp.acquire("b", 100, big, 0, LOCK)) == [(4, 5, 1)]


def test_control_batches_and_holes_are_archived_not_delivered():
    sp = SharePartition(0)
    got = sp.acquire("a", 100, log_of((0, 1, False), (2, 2, True), (5, 6, False)), 0, LOCK)
    assert ranges(got) == [(0, 1, 1), (5, 6, 1)]
    sp.acknowledge("a", 0, 1, [ACCEPT])
    assert sp.start_offset == 5                 # the marker and the hole are finished


def test_runs_write_acquired_as_available_and_restore_round_trips():
    sp = SharePartition(10)
    sp.acquire("a", 100, log_of((10, 14, False)), 0, LOCK)
    sp.acknowledge("a", 11, 11, [ACCEPT])
    sp.acknowledge("a", 12, 12, [REJECT])
    runs = sp.runs()
    assert runs == [(10, 10, AVAILABLE, 1), (11, 11, ACKNOWLEDGED, 1), (12, 12, ARCHIVED, 1),
                    (13, 14, AVAILABLE, 1)]
    back = SharePartition.restore(sp.start_offset, sp.end_offset, runs, 3, 5, 2000)
    assert back.start_offset == 10 and back.end_offset == 15 and back.state_epoch == 3
    assert ranges(back.acquire("b", 100, log_of((10, 14, False)), 0, LOCK)) == \
        [(10, 10, 2), (13, 14, 2)]


def test_skip_to_a_moved_log_start():
    sp = SharePartition(0)
    sp.acquire("a", 100, LOG, 0, LOCK)
    sp.skip_to(3)
    assert sp.start_offset == 3
    sp.skip_to(50)
    assert sp.start_offset == 50 and sp.in_flight() == 0
