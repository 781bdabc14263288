"""Messages: browse by partition, offset and timestamp in both orders, the three views, the
record page with the whole value, search (re2, fields, limits, cancel), export, produce,
re-produce, escaping, and the live tail over SSE (on a real uvicorn server)."""
from __future__ import annotations

import csv
import io
import json
import threading
import time

import httpx
import pytest

from gregor.console.browse import BrowseQuery, plan_ranges
from gregor.console.search import SearchQuery, search
from gregor.client.consumer.offsets import OffsetAndTimestamp
from tests.console.conftest import LiveConsole, csrf, produce, settings_for


def offsets(resp):
    return [(r["partition"], r["offset"]) for r in resp.json()["records"]]


def test_browse_newest_oldest_offset_and_partition(client, topic_factory):
    t = topic_factory(2, records=[(None, f"v{i}".encode(), None, i % 2) for i in range(10)])
    base = f"/api/topics/{t}/messages"
    assert offsets(client.get(base, params={"partition": 0, "limit": 3})) == \
        [(0, 4), (0, 3), (0, 2)]
    assert offsets(client.get(base, params={"partition": 0, "limit": 3, "order": "oldest"})) \
        == [(0, 0), (0, 1), (0, 2)]
    assert offsets(client.get(base, params={"partition": 1, "offset": 2, "limit": 2,
                                            "order": "oldest"})) == [(1, 2), (1, 3)]
    assert offsets(client.get(base, params={"partition": 1, "offset": 2, "limit": 2})) == \
        [(1, 2), (1, 1)]
    both = client.get(base, params={"limit": 50}).json()
    assert len(both["records"]) == 10 and both["watermarks"] == {"0": [0, 5], "1": [0, 5]}
    assert client.get(base, params={"partition": 7}).status_code == 400
    assert client.get(base, params={"order": "sideways"}).status_code == 400


def test_browse_by_timestamp(client, console_broker, topic_factory):
    t = topic_factory(1, records=[b"early-0", b"early-1"])
    time.sleep(0.02)
    cut = int(time.time() * 1000)
    time.sleep(0.02)
    produce(console_broker, t, [b"late-2", b"late-3"])
    base = f"/api/topics/{t}/messages"
    assert offsets(client.get(base, params={"timestamp": str(cut), "order": "oldest"})) == \
        [(0, 2), (0, 3)]
    assert offsets(client.get(base, params={"timestamp": str(cut)})) == [(0, 1), (0, 0)]
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(cut / 1000 - 3600)) + "Z"
    assert len(client.get(base, params={"timestamp": iso, "order": "oldest"})
               .json()["records"]) == 4
    assert client.get(base, params={"timestamp": "yesterday"}).status_code == 400


def test_plan_ranges_clamps_to_the_log():
    lo, hi = {("t", 0): 10}, {("t", 0): 20}
    q = BrowseQuery("t", [0], "newest", offset=5, limit=3)
    assert plan_ranges(q, lo, hi, {}) == {("t", 0): (10, 10)}
    q = BrowseQuery("t", [0], "oldest", offset=50, limit=3)
    assert plan_ranges(q, lo, hi, {}) == {("t", 0): (20, 20)}
    q = BrowseQuery("t", [0], "newest", timestamp_ms=1, limit=3)
    assert plan_ranges(q, lo, hi, {("t", 0): OffsetAndTimestamp(12, 1)}) == {("t", 0): (10, 12)}
    assert plan_ranges(q, lo, hi, {("t", 0): None}) == {("t", 0): (17, 20)}


def test_views_record_page_and_truncation(client, topic_factory):
    big = ("z" * 5000).encode()
    t = topic_factory(1, records=[(b"k", b'{"a": [1, 2], "b": "x"}', [("h", b"hv")], 0),
                                  (None, big, None, 0), (None, b"\x00\xffbin", None, 0)])
    rows = client.get(f"/api/topics/{t}/messages", params={"order": "oldest"}).json()["records"]
    assert rows[0]["key"] == "k" and rows[0]["headers"] == [["h", "hv"]]
    assert rows[1]["value_truncated"] and len(rows[1]["value"]) == 240
    assert rows[1]["value_size"] == 5000
    assert rows[2]["value_binary"] and rows[2]["value"] == "00 ff 62 69 6e"
    html = client.get(f"/topics/{t}/messages", params={"order": "oldest"}).text
    assert f'href="/topics/{t}/messages/0/1">… all' in html
    full = client.get(f"/api/topics/{t}/messages/0/1").json()
    assert full["value"] == "z" * 5000
    assert client.get(f"/topics/{t}/messages/0/1").text.count("z" * 5000) == 1
    pretty = client.get(f"/api/topics/{t}/messages/0/0", params={"view": "json"}).json()
    assert pretty["shown_value"] == '{\n  "a": [\n    1,\n    2\n  ],\n  "b": "x"\n}'
    hexed = client.get(f"/api/topics/{t}/messages/0/2", params={"view": "hex"}).json()
    assert hexed["shown_value"].startswith("00000000  00 ff 62 69 6e")
    assert hexed["value"] == {"base64": "AP9iaW4="}
    not_json = client.get(f"/topics/{t}/messages/0/2", params={"view": "json"})
    assert "This value is not JSON." in not_json.text
    listed = client.get(f"/topics/{t}/messages", params={"order": "oldest", "view": "json"})
    assert "&#34;a&#34;: [" in listed.text or "&quot;a&quot;: [" in listed.text
    assert client.get(f"/api/topics/{t}/messages/0/99").status_code == 404


def test_record_values_are_escaped(client, topic_factory):
    evil = b"<script>alert(1)</script>"
    t = topic_factory(1, records=[(b"<b>key</b>", evil, [("<i>h</i>", b"<img src=x>")], 0)])
    for url in (f"/topics/{t}/messages", f"/topics/{t}/messages/0/0",
                f"/topics/{t}/messages?q=alert"):
        html = client.get(url).text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert "<script>alert" not in html and "<b>key</b>" not in html
        assert "<img src=x>" not in html
        # the only scripts are the console's own file
        assert html.count("<script") == 1 and '<script src="/static/console.js"' in html


def test_search_value_key_and_headers(client, topic_factory):
    recs = [(f"key-{i}".encode(), f"order {i} {'ERROR' if i % 7 == 0 else 'ok'}".encode(),
             [("trace", f"t{i}".encode())], i % 3) for i in range(60)]
    t = topic_factory(3, records=recs)
    base = f"/api/topics/{t}/messages"
    r = client.get(base, params={"q": "ERROR", "limit": 100}).json()
    assert sorted(int(x["key"].split("-")[1]) for x in r["records"]) == list(range(0, 60, 7))
    assert r["search"]["scanned"] == 60 and r["search"]["stopped"] == "end"
    r = client.get(base, params={"q": "(?i)error", "fields": "key"}).json()
    assert r["records"] == []
    r = client.get(base, params={"q": "^key-1[0-2]$", "fields": "key"}).json()
    assert sorted(x["key"] for x in r["records"]) == ["key-10", "key-11", "key-12"]
    r = client.get(base, params={"q": "^t42$", "fields": "headers"}).json()
    assert [x["key"] for x in r["records"]] == ["key-42"]
    r = client.get(base, params={"q": "order", "partition": 1, "order": "oldest",
                                 "limit": 2}).json()
    assert [x["offset"] for x in r["records"]] == [0, 1] and r["search"]["stopped"] == "results"
    r = client.get(base, params={"q": "order", "scan": 10, "limit": 500}).json()
    assert r["search"]["scanned"] == 10 and r["search"]["stopped"] == "limit"
    bad = client.get(base, params={"q": "(unclosed"})
    assert bad.status_code == 400 and "invalid regular expression" in bad.json()["error"]
    bad = client.get(base, params={"q": "(a)\\1"})
    assert bad.status_code == 400          # backreferences: not linear time, refused
    html = client.get(f"/topics/{t}/messages", params={"q": "ERROR"}).text
    assert 'id="search-info"' in html and "records scanned" in html


def test_search_stops_when_cancelled(console_broker, topic_factory):
    t = topic_factory(1, records=[b"x"] * 2000)
    cancel = threading.Event()
    cancel.set()
    q = SearchQuery(t, [0], "oldest", pattern="nothing-matches", scan_limit=10_000,
                    budget_s=30)
    res = search(settings_for(console_broker), q, cancel)
    assert res.reason == "cancelled" and res.scanned < 2000


def test_export_jsonl_and_csv(client, topic_factory):
    t = topic_factory(1, records=[(b"k1", b'say "hi", ok', [("h", b"1")], 0),
                                  (None, b"\xff", None, 0)])
    r = client.get(f"/topics/{t}/messages/export", params={"format": "jsonl",
                                                            "order": "oldest"})
    assert r.headers["content-disposition"] == f'attachment; filename="{t}.jsonl"'
    lines = [json.loads(x) for x in r.text.splitlines()]
    assert [x["offset"] for x in lines] == [0, 1]
    assert lines[0]["key"] == "k1" and lines[0]["value"] == 'say "hi", ok'
    assert lines[0]["headers"] == [["h", "1"]] and lines[1]["value"] == {"base64": "/w=="}
    r = client.get(f"/topics/{t}/messages/export", params={"format": "csv", "order": "oldest",
                                                            "q": "hi"})
    rows = list(csv.reader(io.StringIO(r.text)))
    assert rows[0] == ["topic", "partition", "offset", "timestamp", "key", "value", "headers"]
    assert len(rows) == 2 and rows[1][4:6] == ["k1", 'say "hi", ok']
    assert client.get(f"/topics/{t}/messages/export", params={"format": "xml"}
                      ).status_code == 400


def test_produce_and_reproduce(client, topic_factory):
    t = topic_factory(2)
    other = topic_factory(1)
    r = client.post(f"/topics/{t}/produce", data={
        "key": "k", "value": "hello <world>", "headers": "a=1\nb=two", "partition": "1",
        "csrf": csrf(client)}, follow_redirects=True)
    assert "Produced to " + t + "-1 at offset 0." in r.text
    rec = client.get(f"/api/topics/{t}/messages/1/0").json()
    assert rec["key"] == "k" and rec["value"] == "hello <world>"
    assert rec["headers"] == [["a", "1"], ["b", "two"]]
    r = client.post(f"/api/topics/{t}/produce", json={"value": "AP8=", "encoding": "base64",
                                                      "partition": 0},
                    headers={"x-csrf-token": csrf(client)})
    assert r.json()["offset"] == 0 and r.json()["partition"] == 0
    assert client.get(f"/api/topics/{t}/messages/0/0").json()["value"] == {"base64": "AP8="}
    r = client.post(f"/api/topics/{t}/messages/1/0/reproduce", json={"topic": other},
                    headers={"x-csrf-token": csrf(client)})
    assert r.json()["ok"], r.text
    copy = client.get(f"/api/topics/{other}/messages/0/0").json()
    assert (copy["key"], copy["value"], copy["headers"]) == \
        ("k", "hello <world>", [["a", "1"], ["b", "two"]])
    bad = client.post(f"/api/topics/{t}/produce", json={"value": "x", "headers": "nope"},
                      headers={"x-csrf-token": csrf(client)})
    assert bad.status_code == 400 and "NAME=VALUE" in bad.json()["error"]


def test_live_tail_receives_a_record_produced_after_it_started(console_broker, topic_factory):
    t = topic_factory(2)
    with LiveConsole(settings_for(console_broker)) as live, \
            httpx.Client(base_url=live.url, timeout=20) as http:
        with http.stream("GET", f"/topics/{t}/tail") as resp:
            assert resp.headers["content-type"].startswith("text/event-stream")
            events = resp.iter_lines()
            seen = []
            for line in events:
                seen.append(line)
                if line == "event: ready":
                    break
            produce(console_broker, t, [(b"tk", b"tailed <value>", None, 1)])
            for line in events:
                if line.startswith("data: ") and seen[-1] == "event: record":
                    rec = json.loads(line[6:])
                    break
                seen.append(line)
    assert rec["partition"] == 1 and rec["value"] == "tailed <value>" and rec["key"] == "tk"


def test_a_page_answers_while_a_search_runs(console_broker, topic_factory):
    # Ordering, not timing: the health page comes back while a search is still scanning.
    t = topic_factory(1, records=[b"x" * 50] * 5000)
    with LiveConsole(settings_for(console_broker)) as live, \
            httpx.Client(base_url=live.url, timeout=30) as http:
        state = {}

        def run():
            r = http.get(f"/api/topics/{t}/messages",
                         params={"q": "never", "scan": 5000, "budget": 30,
                                 "order": "oldest"})
            state["search"] = r.json()["search"]
        th = threading.Thread(target=run)
        th.start()
        try:
            # Many small answers while one search runs; none of them waits for it.
            answered = 0
            while th.is_alive() and answered < 1000:
                assert http.get("/api/health").status_code == 200
                answered += 1
        finally:
            th.join(60)
    assert state["search"]["scanned"] == 5000 and answered >= 1


@pytest.mark.parametrize("path", ["/topics/{t}/messages?q=", "/api/topics/{t}/messages"])
def test_empty_query_browses(client, topic_factory, path):
    t = topic_factory(1, records=[b"a"])
    assert client.get(path.format(t=t)).status_code == 200


def test_search_is_cancelled_when_the_client_goes_away(console_broker, topic_factory,
                                                       monkeypatch):
    # The scan itself is replaced by one that runs until cancelled, so the test sees the
    # route's wiring: a client that disconnects sets the search's cancel event.
    import gregor.console.routes_messages as routes
    seen = threading.Event()
    started = threading.Event()

    def endless(settings, q, cancel):
        started.set()
        if cancel.wait(30):
            seen.set()
        from gregor.console.search import SearchResult
        return SearchResult(reason="cancelled")
    monkeypatch.setattr(routes, "search", endless)
    t = topic_factory(1, records=[b"a"])
    with LiveConsole(settings_for(console_broker)) as live:
        with pytest.raises(httpx.ReadTimeout):
            httpx.get(f"{live.url}/api/topics/{t}/messages", params={"q": "a"}, timeout=1.0)
        assert started.is_set()
        assert seen.wait(10), "the search was not cancelled after the client left"
        # the search slot is free again: another search runs
        monkeypatch.setattr(routes, "search", lambda s, q, c: __import__(
            "gregor.console.search", fromlist=["search"]).search(s, q, c))
        r = httpx.get(f"{live.url}/api/topics/{t}/messages", params={"q": "a"}, timeout=20)
        assert r.status_code == 200 and len(r.json()["records"]) == 1


def test_search_matches_characters_as_utf8(client, topic_factory):
    t = topic_factory(1, records=["café".encode(), b"cafe", b"caf\xff"])
    r = client.get(f"/api/topics/{t}/messages", params={"q": "^caf.$", "order": "oldest"})
    assert [x["offset"] for x in r.json()["records"]] == [0, 1]
    r = client.get(f"/api/topics/{t}/messages", params={"q": "é"})
    assert [x["offset"] for x in r.json()["records"]] == [0]
