"""Lag counts every partition of the topics a group reads: where the group committed nothing
it counts from the partition's earliest offset, and both the console and `gregor groups
describe` say so. The cluster page says how many partitions are internal topics'."""
from __future__ import annotations

from click.testing import CliRunner

from gregor.cli.main import cli
from tests.console.conftest import commit_group, unique, wait_for


def test_uncommitted_partitions_count_from_earliest_everywhere(client, console_broker,
                                                              topic_factory):
    t = topic_factory(3, records=[(None, f"v{i}".encode(), None, i % 3) for i in range(15)])
    gid = unique("g")
    commit_group(console_broker, gid, t, {0: 2})        # partitions 1 and 2: nothing committed

    def sampled():
        rows = {g["group_id"]: g for g in client.get("/api/groups").json()["groups"]}
        return rows.get(gid)
    row = wait_for(sampled, what="the sampler to see the group")
    assert row["total_lag"] == 3 + 5 + 5 and row["partitions"] == 3 and row["uncommitted"] == 2
    d = client.get(f"/api/groups/{gid}").json()
    parts = {p["partition"]: p for p in d["partitions"]}
    assert (parts[0]["committed"], parts[0]["lag"], parts[0]["lag_from_earliest"]) == (2, 3, False)
    assert (parts[1]["committed"], parts[1]["lag"], parts[1]["lag_from_earliest"]) == (None, 5, True)
    assert d["total_lag"] == 13 and d["lag_from_earliest"]
    assert 'id="lag-note"' in client.get(f"/groups/{gid}").text

    out = CliRunner().invoke(cli, ["groups", "describe", gid, "--bootstrap-server",
                                   console_broker.bootstrap])
    assert out.exit_code == 0, out.output
    lines = [ln.split() for ln in out.output.splitlines() if ln.startswith(t)]
    by_partition = {int(f[1]): f for f in lines}
    assert by_partition[0][2:5] == ["2", "5", "3"]
    assert by_partition[1][2:5] == ["-", "5", "5"] and by_partition[2][2:5] == ["-", "5", "5"]
    assert "counts from the partition's earliest offset" in out.output


def test_cluster_page_says_which_partitions_are_internal(client, console_broker, topic_factory):
    t = topic_factory(1)
    commit_group(console_broker, unique("g"), t, {0: 0})        # __consumer_offsets exists
    data = client.get("/api").json()
    assert data["internal_partition_count"] >= 1
    assert data["internal_partition_count"] < data["partition_count"]
    html = client.get("/").text
    assert f"({data['internal_partition_count']} of them in internal topics)" in html
