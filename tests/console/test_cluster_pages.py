"""The cluster and topic pages and their /api/ twins, against a real broker: what they show,
and the topic changes (create, alter configs, add partitions, delete)."""
from __future__ import annotations

from tests.console.conftest import csrf, produce, unique, wait_for


def test_cluster_page_and_api(client, console_broker, topic_factory):
    t = topic_factory(2)
    data = client.get("/api/cluster").json()
    assert data == client.get("/api").json()
    assert [b["port"] for b in data["brokers"]] == [console_broker.port]
    assert data["brokers"][0]["controller"] and data["cluster_id"]
    assert data["topic_count"] >= 1 and data["partition_count"] >= 2
    assert data["under_replicated"] == [] and data["offline"] == []
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert data["cluster_id"] in page.text and f">{console_broker.port}<" in page.text
    assert t  # created before the page was read: counted
    assert f'id="topic-count">{data["topic_count"]}<' in page.text


def _segment_bytes(broker, topic, partition) -> int:
    return sum(f.stat().st_size for f in (broker.data_dir / f"{topic}-{partition}").glob("*.log"))


def test_topics_list_shows_offsets_and_sizes_from_describe_log_dirs(client, console_broker,
                                                                     topic_factory):
    t = topic_factory(2, records=[(None, b"x" * 100, None, 0)] * 3 + [(None, b"y", None, 1)])
    listing = client.get("/api/topics").json()
    topics = {x["name"]: x for x in listing["topics"]}
    assert topics[t]["partitions"] == 2 and topics[t]["messages"] == 4
    assert listing["size_source"] == "DescribeLogDirs"
    assert topics[t]["size"] == _segment_bytes(console_broker, t, 0) + \
        _segment_bytes(console_broker, t, 1) > 300
    assert not topics[t]["internal"]
    html = client.get("/topics").text
    assert f'href="/topics/{t}"' in html


def test_sizes_from_metrics_when_describe_log_dirs_is_not_served(console_broker, topic_factory):
    import warnings

    from gregor.console.app import create_app
    from tests.console.conftest import settings_for
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # Starlette 1.x suggests its httpx fork; httpx works
        from starlette.testclient import TestClient
    t = topic_factory(1, records=[b"z" * 200])
    console_broker.limit_versions("DescribeLogDirs", -1)       # as a broker without it
    try:
        app = create_app(settings_for(console_broker, metrics_url=f"http://127.0.0.1:"
                                      f"{console_broker.metrics_port}/metrics"))
        with TestClient(app) as c:
            d = c.get(f"/api/topics/{t}").json()
    finally:
        console_broker.limit_versions("DescribeLogDirs", None)
    assert d["size_source"] == "metrics"
    assert d["partitions"][0]["size"] == _segment_bytes(console_broker, t, 0)


def test_topic_detail(client, console_broker, topic_factory):
    t = topic_factory(3, records=[(b"k", b"v", None, 1)] * 2)
    d = client.get(f"/api/topics/{t}").json()
    assert [p["partition"] for p in d["partitions"]] == [0, 1, 2]
    p1 = d["partitions"][1]
    assert (p1["earliest"], p1["latest"], p1["messages"]) == (0, 2, 2)
    assert p1["leader"] >= 0 and p1["isr"] == p1["replicas"]
    assert p1["size"] == _segment_bytes(console_broker, t, 1) > 0
    assert d["size_source"] == "DescribeLogDirs"
    assert any(c["name"] == "retention.ms" for c in d["configs"])
    html = client.get(f"/topics/{t}").text
    assert 'id="partitions"' in html and "retention.ms" in html
    assert client.get("/api/topics/no-such-topic").status_code == 404
    missing = client.get("/topics/no-such-topic")
    assert missing.status_code == 404 and "no-such-topic" in missing.text


def test_create_alter_grow_and_delete_a_topic(client):
    name = unique("made")
    r = client.post("/topics", data={"name": name, "partitions": "2",
                                     "configs": "retention.ms=123456", "csrf": csrf(client)},
                    follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith(f"/topics/{name}?msg=")
    d = client.get(f"/api/topics/{name}").json()
    assert len(d["partitions"]) == 2
    assert {c["name"]: c["value"] for c in d["configs"]}["retention.ms"] == "123456"

    r = client.post(f"/api/topics/{name}/configs", json={"configs": "cleanup.policy=compact"},
                    headers={"x-csrf-token": csrf(client)})
    assert r.json()["ok"], r.text
    configs = {c["name"]: c for c in client.get(f"/api/topics/{name}").json()["configs"]}
    assert configs["cleanup.policy"]["value"] == "compact"
    assert configs["retention.ms"]["value"] == "123456"      # merged, not replaced

    r = client.post(f"/api/topics/{name}/partitions", json={"total": 4},
                    headers={"x-csrf-token": csrf(client)})
    assert r.json()["ok"], r.text
    assert len(client.get(f"/api/topics/{name}").json()["partitions"]) == 4
    r = client.post(f"/api/topics/{name}/partitions", json={"total": 2},
                    headers={"x-csrf-token": csrf(client)})
    assert r.status_code == 400 and "partition" in r.json()["error"].lower()

    r = client.post(f"/topics/{name}/delete", data={"confirm": "wrong", "csrf": csrf(client)},
                    follow_redirects=False)
    assert r.status_code == 303 and "error=" in r.headers["location"]
    assert client.get(f"/api/topics/{name}").status_code == 200
    r = client.post(f"/topics/{name}/delete", data={"confirm": name, "csrf": csrf(client)},
                    follow_redirects=True)
    assert r.status_code == 200 and f"Deleted topic {name}." in r.text
    wait_for(lambda: client.get(f"/api/topics/{name}").status_code == 404,
             what="the topic to be gone")


def test_create_topic_errors_are_shown(client, topic_factory):
    t = topic_factory(1)
    r = client.post("/topics", data={"name": t, "csrf": csrf(client)}, follow_redirects=True)
    assert "already exists" in r.text and 'class="flash error"' in r.text
    r = client.post("/api/topics", json={"name": unique("bad"), "partitions": "x"},
                    headers={"x-csrf-token": csrf(client)})
    assert r.status_code == 400 and "whole number" in r.json()["error"]


def test_health(client):
    h = client.get("/api/health").json()
    assert h["ok"] is True and h["error"] is None and h["last_ok"] > 0


def test_produce_helper_sanity(console_broker, topic_factory):
    # The fixtures the other tests lean on: records land where they were sent.
    t = topic_factory(2)
    produce(console_broker, t, [(b"a", b"1", None, 1)])
    from gregor import AdminClient
    with AdminClient({"bootstrap.servers": console_broker.bootstrap}) as a:
        ends = a.list_offsets({(t, 0): "latest", (t, 1): "latest"})
    assert (ends[(t, 0)].offset, ends[(t, 1)].offset) == (0, 1)
