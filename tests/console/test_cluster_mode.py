"""The console against a gregor cluster (three brokers on ZooKeeper): the cluster page lists
every broker and the controller, a replicated topic shows its replicas and ISR, records are
browsed from partitions led by different brokers, and groups and transactions are read from
their coordinators wherever they live. Skips without ZooKeeper (fails under CI=true), as the
cluster tests do."""
from __future__ import annotations

import warnings

import pytest

from gregor.console.app import create_app
from tests.console.conftest import commit_group, csrf, produce, settings_for, unique, wait_for

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

pytestmark = pytest.mark.slow


class _Cluster:
    def __init__(self, c):
        self.bootstrap = c.bootstrap


def test_console_over_a_three_broker_cluster(three_brokers):
    cluster = _Cluster(three_brokers)
    app = create_app(settings_for(cluster))
    with TestClient(app) as c:
        c.get("/")
        d = c.get("/api/cluster").json()
        assert len(d["brokers"]) == 3
        assert d["controller_id"] == three_brokers.controller_id()
        assert sum(b["controller"] for b in d["brokers"]) == 1
        t = unique("replicated")
        r = c.post("/api/topics", json={"name": t, "partitions": 3, "replication_factor": 3},
                   headers={"x-csrf-token": csrf(c)})
        assert r.json()["ok"], r.text
        topic = wait_for(lambda: (lambda d: d if all(len(p["isr"]) == 3 for p in
                                                     d.get("partitions", [])) and
                                  d.get("partitions") else None)(
            c.get(f"/api/topics/{t}").json()), what="three in-sync replicas")
        assert {p["leader"] for p in topic["partitions"]} <= {b["id"] for b in d["brokers"]}
        assert all(sorted(p["replicas"]) == sorted(b["id"] for b in d["brokers"])
                   for p in topic["partitions"])
        produce(cluster, t, [(f"k{i}".encode(), f"v{i}".encode(), None, i % 3)
                             for i in range(9)])
        rows = c.get(f"/api/topics/{t}/messages", params={"limit": 20}).json()["records"]
        assert sorted((r["partition"], r["offset"]) for r in rows) == \
            [(p, o) for p in range(3) for o in range(3)]
        found = c.get(f"/api/topics/{t}/messages", params={"q": "^v[47]$"}).json()
        assert sorted(r["value"] for r in found["records"]) == ["v4", "v7"]
        gid = unique("cg")
        commit_group(cluster, gid, t, {0: 1, 1: 2, 2: 3})
        # The first sample that lists the group already has its offsets: a coordinator
        # shows a group a commit creates only once that commit is replicated (a group
        # listed earlier showed lag 0 while its first commit waited for the followers).
        row = wait_for(lambda: next((g for g in c.get("/api/groups").json()["groups"]
                                     if g["group_id"] == gid), None),
                       what="the next lag sample to list the group")
        assert (row["total_lag"], row["partitions"]) == (3, 3)
        assert c.get(f"/api/groups/{gid}").json()["total_lag"] == 3
        assert c.get("/api/transactions").status_code == 200
