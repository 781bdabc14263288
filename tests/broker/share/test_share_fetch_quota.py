"""ShareFetch under the fetch byte-rate quota (consumer_byte_rate), as Fetch is: its size is
capped at what the quota allows in one window and its response counts against the quota; a
response that takes the client over is sent whole (its records are acquired) with
throttle_time_ms, and a member of the same client that fetches while the client is over its
quota acquires nothing until the throttle time has passed. No record is lost or doubled."""
import threading
import time

import pytest

from gregor.client.admin import AdminClient
from gregor.testing import Broker
from gregor.testing.wire import WireClient

from .wire_share import Member, acquired, create_topic, part, port_of, produce

QUOTA = 10_000          # bytes/s; windows of 1 s, two of them: a fetch is capped at 10 kB
VALUE = 40_000          # one record per batch, each 4x the cap: one batch throttles ~3 s
WAIT_S = 30             # liveness bound only


@pytest.fixture
def broker():
    with Broker({"quota.window.num": 2, "quota.window.size.seconds": 1}) as b:
        with AdminClient({"bootstrap.servers": b.bootstrap_servers}) as admin:
            admin.alter_client_quotas([({"client-id": "wire-test"},
                                        {"consumer_byte_rate": QUOTA})])
        yield b


def test_share_fetch_is_capped_and_throttled_without_losing_records(broker):
    m1 = Member(broker, "g", ["t"])
    m2 = Member(broker, "g", ["t"])
    tid = create_topic(m1.client, "t")
    for m in (m1, m2):
        m.heartbeat()
        assert acquired(m.fetch(tid)) == []          # the share-partition starts (latest)
    for i in range(3):
        produce(m1.client, "t", [b"%d" % i + b"v" * VALUE])
    # ShareFetch v1 responses are held back for their throttle time (its clients are not
    # told to hold back themselves), so m1's answer is awaited beside
    answers = []
    t = threading.Thread(target=lambda: answers.append(m1.fetch(tid)))
    t.start()
    sp = None
    deadline = time.monotonic() + WAIT_S
    while (sp is None or sp.in_flight() == 0) and time.monotonic() < deadline:
        sp = broker.broker.share.partitions.get(("g", tid, 0))
        time.sleep(0.01)
    # the same client on another connection is over its quota: nothing is acquired
    r2 = m2.fetch(tid)
    assert r2["error_code"] == 0 and acquired(r2) == [] and r2["throttle_time_ms"] > 0
    t.join(WAIT_S)
    r = answers[0]
    first = acquired(r)
    assert first == [(0, 0, 1)]                  # capped: one batch, not the 1 MiB asked for
    assert len(part(r)["records"]) <= VALUE + 200
    assert r["throttle_time_ms"] > 0             # over the quota, but the records came
    # once the throttle time has passed, the rest arrives, each record once
    got = {o for f, la, _ in first for o in range(f, la + 1)}
    deadline = time.monotonic() + WAIT_S
    while len(got) < 3 and time.monotonic() < deadline:
        for m in (m2, m1):
            for f, la, c in acquired(m.fetch(tid)):
                assert c == 1
                for o in range(f, la + 1):
                    assert o not in got
                    got.add(o)
        time.sleep(0.05)
    assert got == set(range(3))
    for m in (m1, m2):
        m.close()


class OtherClient(WireClient):
    """The same requests under a client id without a quota."""

    def send(self, api_name, version, body, client_id="no-quota"):
        return super().send(api_name, version, body, client_id=client_id)


def test_a_client_without_a_quota_is_not_capped(broker):
    m = Member(broker, "h", ["u"])
    m.client.close()
    m.client = OtherClient(port_of(broker))
    tid = create_topic(m.client, "u")
    m.heartbeat()
    m.fetch(tid)
    for i in range(6):
        produce(m.client, "u", [b"%d" % i + b"v" * VALUE])
    r = m.fetch(tid)
    assert acquired(r) == [(0, 5, 1)] and r["throttle_time_ms"] == 0
    m.close()
