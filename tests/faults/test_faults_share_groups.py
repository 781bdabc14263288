"""Share groups under faults: kill -9 of the broker while a member acknowledges records one
by one (every ACCEPT the broker answered is never delivered again; every record not accepted
comes back), and hostile share-session frames (closed connection, broker alive)."""
from __future__ import annotations

import random
import threading
import time

import pytest

from gregor.protocol import messages
from gregor.protocol.header import encode_request
from gregor.testing.wire import ConnectionClosed
from tests.broker.share.wire_share import (ACCEPT, Member, acquired, create_topic, part,
                                           produce)
from tests.faults import frames
from tests.faults.checks import assert_alive
from tests.interop.targets import start_target, target_name

pytestmark = [pytest.mark.interop,
              pytest.mark.skipif(target_name() != "gregor",
                                 reason="share groups need ShareFetch (API 78)")]

N = 200
CLOSE_TIMEOUT_S = 10.0     # a bound for the broker to drop a bad connection, not a duration


class _Port:
    """What Member needs of a broker: its bootstrap address."""

    def __init__(self, b):
        self.bootstrap_servers = b.bootstrap


def test_kill_9_mid_acknowledgement_keeps_every_answered_accept(tmp_path):
    b = start_target(tmp_path / "data")
    try:
        m = Member(_Port(b), "crash", ["t"])
        tid = create_topic(m.client, "t")
        m.heartbeat()
        m.fetch(tid)                                        # the share-partition starts at 0
        produce(m.client, "t", [b"%d" % i for i in range(N)])
        got = acquired(m.fetch(tid, max_records=N))
        held = sorted({o for f, la, _c in got for o in range(f, la + 1)})
        assert held == list(range(N))
        answered: list[int] = []
        stop = threading.Event()

        def acknowledge_one_by_one():
            for o in held:
                if stop.is_set():
                    return
                try:
                    r = m.acknowledge(tid, [(o, o, [ACCEPT])])
                except (ConnectionClosed, OSError):
                    return
                if r["error_code"] == 0 and part(r)["error_code"] == 0:
                    answered.append(o)
        worker = threading.Thread(target=acknowledge_one_by_one, daemon=True)
        worker.start()
        while len(answered) < N // 4 and worker.is_alive():
            worker.join(0.01)
        b.kill()                                            # kill -9, mid-stream
        stop.set()
        worker.join(30)
        assert N // 4 <= len(answered) < N, "the kill did not land mid-acknowledgement"
        b.start()
        after = Member(_Port(b), "crash", ["t"])
        after.heartbeat()
        redelivered = set()
        for _ in range(50):
            r = after.fetch(tid, max_records=N)
            for f, la, count in acquired(r):
                assert count >= 2                           # delivered before the crash
                redelivered |= set(range(f, la + 1))
            if redelivered and not acquired(r):
                break
        assert redelivered.isdisjoint(answered), "an answered ACCEPT was delivered again"
        # every record not accepted comes back; only the one ACCEPT in flight at the kill
        # (written, perhaps, but not answered) may not
        unanswered = set(range(N)) - set(answered)
        assert len(unanswered - redelivered) <= 1, sorted(unanswered - redelivered)[:5]
    finally:
        b.stop()


@pytest.fixture(scope="module")
def share_broker(tmp_path_factory):
    b = start_target(tmp_path_factory.mktemp("share-hostile") / "data")
    try:
        yield b
    finally:
        b.stop()


def _share_fetch_frame(corr: int, version: int = 1, partitions: int = 1) -> bytes:
    api = messages.api("ShareFetch")
    body = {"group_id": "g", "member_id": "m", "share_session_epoch": 0, "max_wait_ms": 0,
            "min_bytes": 1, "max_bytes": 1024, "max_records": 10, "batch_size": 10,
            "share_acquire_mode": 0, "is_renew_ack": False,
            "topics": [{"topic_id": bytes(16), "partitions": [
                {"partition_index": p, "acknowledgement_batches": []}
                for p in range(partitions)]}],
            "forgotten_topics_data": []}
    return encode_request(api, version, corr, "hostile", body)


def _expect_closed(b, payload: bytes, what: str) -> None:
    with frames.connect(b.port) as s:
        try:
            s.sendall(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert frames.closed_by_peer(s, CLOSE_TIMEOUT_S), f"{what}: the connection stayed open"
    assert_alive(b)


def test_truncated_share_fetch_is_closed(share_broker):
    good = _share_fetch_frame(1)
    for cut in (8, 20, len(good) // 2, len(good) - 1):
        _expect_closed(share_broker, frames.i32(cut - 4) + good[4:cut], f"ShareFetch cut {cut}")


def test_share_fetch_claiming_a_huge_array_is_closed_with_bounded_memory(share_broker):
    good = _share_fetch_frame(2)
    # the Topics array's compact length (varint) rewritten to claim 2^31 entries
    marker = bytes([2]) + bytes(16)           # compact length 1, then the topic id
    at = good.index(marker)
    claimed = good[:at] + b"\xff\xff\xff\xff\x07" + good[at + 1:]
    hostile = frames.i32(len(claimed) - 4) + claimed[4:]
    before = frames.rss_bytes(share_broker.pid)
    _expect_closed(share_broker, hostile, "ShareFetch with 2^31 topics")
    assert frames.rss_bytes(share_broker.pid) - before < 64 * 1024 * 1024


def test_mutated_share_frames_then_a_member_still_works(share_broker):
    rnd = random.Random(932)
    seeds = [_share_fetch_frame(3), _share_fetch_frame(4, version=2, partitions=3)]
    ack = encode_request(messages.api("ShareAcknowledge"), 1, 5, "hostile", {
        "group_id": "g", "member_id": "m", "share_session_epoch": 1,
        "topics": [{"topic_id": bytes(16), "partitions": [{"partition_index": 0,
                    "acknowledgement_batches": [{"first_offset": 0, "last_offset": 9,
                                                 "acknowledge_types": [1]}]}]}]})
    seeds.append(ack)
    for _ in range(300):
        s = frames.connect(share_broker.port, timeout=5)
        try:
            s.sendall(frames.mutate(rnd, rnd.choice(seeds)))
            frames.closed_by_peer(s, 0.2)
        except OSError:
            pass
        finally:
            s.close()
    assert_alive(share_broker)
    m = Member(_Port(share_broker), "after-fuzz", ["after"])
    tid = create_topic(m.client, "after")
    assert m.heartbeat()["error_code"] == 0
    assert m.fetch(tid)["error_code"] == 0
    produce(m.client, "after", [b"x"])
    assert acquired(m.fetch(tid)) == [(0, 0, 1)]


def _describe(b, group: str) -> dict:
    from tests.interop.test_interop_share_groups import _wire
    with _wire(b) as w:
        return w.request("ShareGroupDescribe", 1, {
            "group_ids": [group], "include_authorized_operations": False})["groups"][0]


def _share_groups(b) -> list:
    from tests.interop.test_interop_share_groups import _wire
    with _wire(b) as w:
        r = w.request("ListGroups", 5, {"states_filter": [], "types_filter": ["share"]})
        return [(g["group_id"], g["group_state"]) for g in r["groups"]]


def test_share_consumer_carries_on_in_its_group_after_kill_9_of_the_broker(tmp_path):
    """The group's membership is in __consumer_offsets: after kill -9 and a restart the
    ShareConsumer keeps its member id and epoch (no UNKNOWN_MEMBER_ID rejoin, which would
    restart the group epoch at 1), ListGroups still lists the group, and once the consumer
    has left, DeleteGroups deletes the empty group after another kill -9."""
    from tests.interop.test_interop_groups import new_topic
    from tests.interop.test_interop_share_groups import (WAIT_S, drain, produce,
                                                         share_consumer, started)
    b = start_target(tmp_path / "data")
    try:
        topic = new_topic(b, 0, partitions=1)
        group = "share-failover"
        c = share_consumer(b, group)
        passing = share_consumer(b, group)
        started(b, [c, passing], group, topic)
        passing.close()              # joined and left: the group epoch is past 1 now
        produce(b, topic, 20)
        assert sorted(drain([c], 20)) == list(range(20))
        deadline = time.monotonic() + WAIT_S
        d = _describe(b, group)
        while d["members"][0]["member_epoch"] != d["group_epoch"] and \
                time.monotonic() < deadline:      # its next heartbeat takes the new epoch
            c.poll(0.2)
            d = _describe(b, group)
        assert len(d["members"]) == 1
        member, epoch, group_epoch = (d["members"][0]["member_id"],
                                      d["members"][0]["member_epoch"], d["group_epoch"])
        assert group_epoch >= 3 and epoch == group_epoch
        b.kill()                                           # kill -9
        b.start()
        d = _describe(b, group)                            # loaded, before any heartbeat
        assert d["error_code"] == 0 and d["group_epoch"] == group_epoch
        assert [(m["member_id"], m["member_epoch"]) for m in d["members"]] == \
            [(member, epoch)]
        assert _share_groups(b) == [(group, "Stable")]
        produce(b, topic, 20)
        seen = drain([c], 20)
        assert sorted(seen) == list(range(20, 40))
        d = _describe(b, group)
        assert d["group_epoch"] == group_epoch, "the consumer joined the group again"
        assert [(m["member_id"], m["member_epoch"]) for m in d["members"]] == \
            [(member, epoch)]
        c.close()                                          # leaves: the group is empty
        deadline = time.monotonic() + WAIT_S
        while _describe(b, group)["members"] and time.monotonic() < deadline:
            time.sleep(0.1)
        b.kill()
        b.start()
        assert _share_groups(b) == [(group, "Empty")]
        from tests.interop.test_interop_share_groups import _wire
        with _wire(b) as w:
            r = w.request("DeleteGroups", 2, {"groups_names": [group]})
        assert r["results"][0]["error_code"] == 0
        assert _share_groups(b) == []
        b.kill()
        b.start()
        assert _share_groups(b) == []
        assert _describe(b, group)["error_code"] == 69      # GROUP_ID_NOT_FOUND
    finally:
        b.stop()
