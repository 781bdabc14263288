"""Share groups (KIP-932) in the console: the groups list shows them with their type and lag
(the share-partitions' start offsets against the log end), and the group page shows state,
members, start offset and lag per partition from ShareGroupDescribe and
DescribeShareGroupOffsets (DescribeGroups does not know share groups)."""
from __future__ import annotations

import time
import warnings

import pytest

from gregor import AdminClient, Producer
from gregor.client.consumer.share import ShareConsumer
from gregor.console import ConsoleSettings
from gregor.console.app import create_app
from tests.console.conftest import unique, wait_for


@pytest.fixture(scope="module")
def stack():
    from gregor.testing import Broker
    with Broker() as b:
        yield b


@pytest.fixture(scope="module")
def client(stack):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient
    settings = ConsoleSettings(bootstrap=stack.bootstrap_servers, request_timeout_s=5.0,
                               lag_interval_s=0.5)
    with TestClient(create_app(settings)) as c:
        c.get("/")
        yield c


def test_share_group_listed_and_described(client, stack):
    topic, group = unique("shared"), unique("workers")
    with AdminClient({"bootstrap.servers": stack.bootstrap_servers}) as a:
        a.create_topics([topic], num_partitions=2)
    consumer = ShareConsumer(group, stack.bootstrap_servers)
    try:
        consumer.subscribe([topic])
        # poll until both share-partitions started (records from then on are delivered)
        svc = stack.broker.share
        wait_for(lambda: consumer.poll(0.1) == [] and
                 sum(k[0] == group for k in svc.partitions) == 2,
                 what="the share-partitions to start")
        p = Producer({"bootstrap.servers": stack.bootstrap_servers})
        for i in range(6):
            p.send(topic, value=b"job-%d" % i, partition=i % 2).get(10)
        p.close()
        page = client.get(f"/api/groups/{group}").json()
        assert page["type"] == "share" and page["state"] == "Stable"
        assert len(page["members"]) == 1
        assert sorted(m for r in page["partitions"] for m in r["members"]) == \
            [page["members"][0]["member_id"]] * 2
        assert {(r["partition"], r["start_offset"], r["end"], r["lag"])
                for r in page["partitions"]} == {(0, 0, 3, 3), (1, 0, 3, 3)}
        html = client.get(f"/groups/{group}")
        assert html.status_code == 200 and "Share group" in html.text

        def listed():
            rows = {g["group_id"]: g for g in client.get("/api/groups").json()["groups"]}
            g = rows.get(group)
            return g if g and g["total_lag"] == 6 else None
        row = wait_for(listed, what="the share group in the list with its lag")
        assert row["type"] == "share" and row["topics"] == [topic]
        # the records consumed and acknowledged: the start offsets move to the log end
        got = []
        deadline = time.monotonic() + 20
        while len(got) < 6 and time.monotonic() < deadline:
            got += consumer.poll(0.2)
        assert len(got) == 6
        consumer.commit_sync()

        def caught_up():
            page = client.get(f"/api/groups/{group}").json()
            return page["total_lag"] == 0 and page
        page = wait_for(caught_up, what="the share group's lag to reach 0")
        assert {r["start_offset"] for r in page["partitions"]} == {3}
    finally:
        consumer.close()
    # an unknown group is what DescribeGroups says (Dead, no members), not a share group
    other = client.get("/api/groups/no-such-group").json()
    assert other["type"] == "classic" and other["state"] == "Dead"
