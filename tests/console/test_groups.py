"""Consumer groups: the list from the lag sampler, one group with offset lag and time lag,
members and assignments, the lag history and chart, resets (dry run, execute, refused while
members are active, as Kafka), deletion; the transactions page; the lag sampler's ring buffer
and the SVG chart."""
from __future__ import annotations

import time

import pytest

from gregor import Consumer, Producer
from gregor.console.charts import line_chart, sparkline
from gregor.console.lag import GroupLag, LagSampler
from tests.console.conftest import commit_group, csrf, unique, wait_for


def group_row(client, gid):
    rows = {g["group_id"]: g for g in client.get("/api/groups").json()["groups"]}
    return rows.get(gid)


def test_group_list_detail_lag_and_time_lag(client, console_broker, topic_factory):
    t = topic_factory(2, records=[(None, f"v{i}".encode(), None, i % 2) for i in range(10)])
    gid = unique("g")
    time.sleep(0.05)              # the records at the committed offsets are older than now
    commit_group(console_broker, gid, t, {0: 2, 1: 5})
    row = wait_for(lambda: group_row(client, gid), what="the sampler to see the group")
    assert row["state"] == "Empty" and row["topics"] == [t] and row["partitions"] == 2
    assert row["total_lag"] == 3 and row["max_lag"] == 3 and row["type"] == "classic"
    d = client.get(f"/api/groups/{gid}").json()
    parts = {p["partition"]: p for p in d["partitions"]}
    assert (parts[0]["committed"], parts[0]["end"], parts[0]["lag"]) == (2, 5, 3)
    assert (parts[1]["committed"], parts[1]["end"], parts[1]["lag"]) == (5, 5, 0)
    assert parts[0]["time_lag_ms"] >= 50 and parts[1]["time_lag_ms"] == 0
    assert d["total_lag"] == 3 and d["max_time_lag_ms"] == parts[0]["time_lag_ms"]
    html = client.get(f"/groups/{gid}").text
    assert f'src="/groups/{gid}/lag.svg"' in html and 'id="group-partitions"' in html
    assert f'href="/groups/{gid}"' in client.get("/groups").text
    topic_page = client.get(f"/api/topics/{t}").json()
    assert {"group_id": gid, "state": "Empty", "lag": 3} in topic_page["groups"]


def test_lag_history_chart_and_reset(client, console_broker, topic_factory):
    t = topic_factory(1, records=[b"a"] * 8)
    gid = unique("g")
    commit_group(console_broker, gid, t, {0: 1})
    wait_for(lambda: len(client.get(f"/api/groups/{gid}").json()["history"]) >= 2,
             what="two lag samples")
    svg = client.get(f"/groups/{gid}/lag.svg")
    assert svg.headers["content-type"].startswith("image/svg+xml")
    assert "<polyline" in svg.text and f"lag of {gid}" in svg.text

    dry = client.get(f"/api/groups/{gid}/reset", params={"strategy": "shift", "value": "4"})
    assert dry.json()["partitions"] == [{"topic": t, "partition": 0, "before": 1, "after": 5,
                                         "lag_after": 3}]
    assert dry.json()["executed"] is False
    assert client.get(f"/api/groups/{gid}").json()["total_lag"] == 7   # nothing changed
    page = client.get(f"/groups/{gid}/reset", params={"strategy": "latest"})
    assert 'id="reset-plan"' in page.text and 'id="reset-execute"' in page.text
    r = client.post(f"/groups/{gid}/reset", data={"strategy": "shift", "value": "4",
                                                  "csrf": csrf(client)},
                    follow_redirects=True)
    assert f"Reset 1 partition(s) of group {gid}." in r.text
    assert client.get(f"/api/groups/{gid}").json()["total_lag"] == 3
    assert group_row(client, gid)["total_lag"] == 3       # sampled again at once
    for strategy, value, after in (("earliest", None, 0), ("latest", None, 8),
                                   ("offset", "99", 8), ("offset", "3", 3),
                                   ("shift", "-100", 0)):
        r = client.post(f"/api/groups/{gid}/reset", json={"strategy": strategy,
                                                          "value": value},
                        headers={"x-csrf-token": csrf(client)})
        assert r.json()["partitions"][0]["after"] == after, (strategy, value, r.text)
    cut = int(time.time() * 1000) + 3_600_000
    r = client.get(f"/api/groups/{gid}/reset", params={"strategy": "timestamp",
                                                       "value": str(cut)})
    assert r.json()["partitions"][0]["after"] == 8
    r = client.get(f"/api/groups/{gid}/reset", params={"strategy": "sideways"})
    assert r.status_code == 409 and "unknown reset strategy" in r.json()["error"]


def test_reset_and_delete_refused_while_members_are_active(client, console_broker,
                                                           topic_factory):
    t = topic_factory(1, records=[b"a"] * 3)
    gid = unique("live")
    c = Consumer({"bootstrap.servers": console_broker.bootstrap, "group.id": gid,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.subscribe([t])
        wait_for(lambda: c.poll(0.2) or c.assignment(), what="the consumer to join")
        c.commit(offsets=[(t, 0, 1)])
        d = wait_for(lambda: (lambda d: d if d["state"] == "Stable" else None)(
            client.get(f"/api/groups/{gid}").json()), what="a Stable group")
        assert len(d["members"]) == 1 and d["members"][0]["assignment"] == [[t, 0]]
        assert d["partitions"][0]["member_id"] == d["members"][0]["member_id"]
        r = client.get(f"/api/groups/{gid}/reset", params={"strategy": "earliest"})
        assert r.status_code == 409
        assert r.json()["error"] == (f"Assignments can only be reset if the group '{gid}' is "
                                     "inactive, but the current state is Stable. Stop its "
                                     "consumers first.")
        r = client.post(f"/api/groups/{gid}/reset", json={"strategy": "earliest"},
                        headers={"x-csrf-token": csrf(client)})
        assert r.status_code == 409
        r = client.post(f"/api/groups/{gid}/delete", json={"confirm": gid},
                        headers={"x-csrf-token": csrf(client)})
        assert r.status_code == 400 and "members" in r.json()["error"]
    finally:
        c.close()
    r = client.post(f"/groups/{gid}/delete", data={"confirm": gid, "csrf": csrf(client)},
                    follow_redirects=True)
    assert f"Deleted group {gid}." in r.text
    assert group_row(client, gid) is None


def test_transactions_page(client, console_broker, topic_factory):
    t = topic_factory(2)
    tid = unique("tx")
    p = Producer({"bootstrap.servers": console_broker.bootstrap, "transactional.id": tid})
    try:
        p.init_transactions()
        p.begin_transaction()
        p.send(t, b"in-txn", partition=0).get(10)
        d = client.get("/api/transactions").json()
        [txn] = [x for x in d["transactions"] if x["transactional_id"] == tid]
        assert txn["state"] == "Ongoing" and txn["partitions"] == [[t, 0]]
        assert txn["age_ms"] >= 0 and not txn["overdue"] and txn["timeout_ms"] > 0
        [prod] = [x for x in d["producers"] if x["topic"] == t]
        assert prod["partition"] == 0 and prod["open"] and not prod["hanging"]
        assert prod["producer_id"] == txn["producer_id"]
        by_topic = client.get("/api/transactions", params={"topic": t}).json()
        assert {(x["topic"], x["partition"]) for x in by_topic["producers"]} == {(t, 0)}
        html = client.get("/transactions").text
        assert tid in html and 'id="producers"' in html
    finally:
        p.abort_transaction()
        p.close()


def test_lag_sampler_keeps_a_bounded_ring_per_group():
    class Pool:
        n = 0

        async def admin(self, fn):
            Pool.n += 1
            return {"g": GroupLag("g", "Empty", "consumer", "classic", {("t", 0): 1},
                                  {("t", 0): 1 + Pool.n})}
    import asyncio
    sampler = LagSampler(Pool(), 5.0, history=3)

    async def run():
        for _ in range(5):
            await sampler.sample()
    asyncio.run(run())
    assert [v for _, v in sampler.series("g")] == [3, 4, 5]
    assert sampler.latest["g"].total_lag == 5 and sampler.series("other") == []


def test_charts_escape_and_draw():
    svg = line_chart([(0, 1), (5, 10), (10, 4)], title="lag of <g&>")
    assert "lag of &lt;g&amp;&gt;" in svg and svg.count("<polyline") == 1
    assert "no samples yet" in line_chart([], title="x")
    assert sparkline([1]) == "" and "<polyline" in sparkline([1, 3, 2])


@pytest.mark.parametrize("path", ["/api/groups/{g}", "/groups/{g}"])
def test_unknown_group_is_dead_with_nothing(client, path):
    # Kafka describes an unknown group as Dead with no members, and so does the console.
    r = client.get(path.format(g=unique("nobody")))
    assert r.status_code == 200
    if path.startswith("/api"):
        assert r.json()["state"] == "Dead" and r.json()["partitions"] == []


def test_kip848_group_shows_as_consumer_type(client, console_broker, topic_factory):
    confluent = pytest.importorskip("confluent_kafka")
    t = topic_factory(2, records=[(None, b"v", None, 0), (None, b"w", None, 1)])
    gid = unique("kip848")
    c = confluent.Consumer({"bootstrap.servers": console_broker.bootstrap, "group.id": gid,
                            "group.protocol": "consumer", "auto.offset.reset": "earliest",
                            "enable.auto.commit": False})
    try:
        c.subscribe([t])
        wait_for(lambda: c.poll(0.2) is not None and False or c.assignment(),
                 what="a KIP-848 assignment")
        row = wait_for(lambda: group_row(client, gid), what="the sampler to list the group")
        assert row["type"] == "consumer"
        d = wait_for(lambda: (lambda d: d if d["members"] and d["members"][0]["assignment"]
                              else None)(client.get(f"/api/groups/{gid}").json()),
                     what="the member's assignment")
        assert d["type"] == "consumer" and d["protocol_type"] == "consumer"
        assert sorted(map(tuple, d["members"][0]["assignment"])) == [(t, 0), (t, 1)]
    finally:
        c.close()
