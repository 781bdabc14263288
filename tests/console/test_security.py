"""The console's guards: token (bearer or login cookie), CSRF on every change, read-only mode
(403, no buttons), the Host check, security headers; the broker-down banner and recovery; the
`gregor console` command's ready line."""
from __future__ import annotations

import re
import subprocess
import sys
import warnings

import httpx
import pytest

from gregor.console.app import create_app
from gregor.console.security import CSP
from tests.console.conftest import (LiveConsole, csrf, settings_for, unique, wait_for)
from tests.support.broker import REPO_ROOT, BrokerProcess

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

# Every change route, with a body that would be valid apart from the guard under test.
CHANGES = [("/topics", {"name": "guarded"}), ("/topics/{t}/delete", {"confirm": "{t}"}),
           ("/topics/{t}/partitions", {"total": "5"}),
           ("/topics/{t}/configs", {"configs": "retention.ms=1000"}),
           ("/topics/{t}/produce", {"value": "x"}),
           ("/topics/{t}/messages/0/0/reproduce", {}),
           ("/groups/{g}/reset", {"strategy": "earliest"}),
           ("/groups/{g}/delete", {"confirm": "{g}"})]


def _fill(path, body, t, g):
    return (path.format(t=t, g=g), {k: v.format(t=t, g=g) for k, v in body.items()})


@pytest.fixture(scope="module")
def guarded_topic(console_broker):
    from tests.console.conftest import produce
    from gregor import AdminClient
    name = unique("guarded")
    with AdminClient({"bootstrap.servers": console_broker.bootstrap}) as a:
        a.create_topics([name], num_partitions=1)
    produce(console_broker, name, [b"keep-me"])
    return name


def _unchanged(client, t):
    d = client.get(f"/api/topics/{t}").json()
    assert len(d["partitions"]) == 1 and d["partitions"][0]["latest"] == 1
    assert client.get("/api/topics/guarded").status_code == 404


def test_every_change_needs_the_csrf_token(client, guarded_topic):
    for path, body in CHANGES:
        path, body = _fill(path, body, guarded_topic, "g-none")
        for api in ("", "/api"):
            r = client.post(api + path, data=body)
            assert r.status_code == 403 and "CSRF" in r.text, (api + path, r.text)
            r = client.post(api + path, data={**body, "csrf": "x" * 43})
            assert r.status_code == 403, api + path
    _unchanged(client, guarded_topic)


def test_read_only_refuses_every_change_and_shows_no_buttons(console_broker, guarded_topic):
    app = create_app(settings_for(console_broker, read_only=True))
    with TestClient(app) as c:
        html = c.get(f"/topics/{guarded_topic}/messages").text
        assert 'id="read-only-badge"' in html
        for page in ("/topics", f"/topics/{guarded_topic}", f"/topics/{guarded_topic}/messages",
                     f"/topics/{guarded_topic}/messages/0/0"):
            assert 'method="post"' not in c.get(page).text, page
        for path, body in CHANGES:
            path, body = _fill(path, body, guarded_topic, "g-none")
            for api in ("", "/api"):
                r = c.post(api + path, data={**body, "csrf": csrf(c)})
                assert r.status_code == 403 and "read-only" in r.text, api + path
        assert c.get(f"/api/topics/{guarded_topic}/messages").status_code == 200
        _unchanged(c, guarded_topic)


def test_token_bearer_cookie_and_login(console_broker, guarded_topic):
    app = create_app(settings_for(console_broker, token="s3cret-token"))
    with TestClient(app) as c:
        r = c.get("/api/cluster")
        assert r.status_code == 401 and "token" in r.json()["error"]
        r = c.get(f"/topics/{guarded_topic}", follow_redirects=False)
        assert r.status_code == 303
        assert r.headers["location"] == f"/login?next=/topics/{guarded_topic}"
        assert c.get("/static/console.css").status_code == 200
        assert c.get("/api/cluster", headers={"authorization": "Bearer wrong"}
                     ).status_code == 401
        assert c.get("/api/cluster", headers={"authorization": "Bearer s3cret-token"}
                     ).status_code == 200
        # a bearer request needs no CSRF token (a cross-site page cannot send that header)
        r = c.post(f"/api/topics/{guarded_topic}/produce", json={"value": "by-bearer"},
                   headers={"authorization": "Bearer s3cret-token"})
        assert r.json()["ok"], r.text
        login = c.get("/login")
        assert 'name="token"' in login.text
        r = c.post("/login", data={"token": "nope", "csrf": csrf(c), "next": "/topics"},
                   follow_redirects=False)
        assert r.status_code == 303 and "wrong+token" in r.headers["location"]
        assert c.get("/api/cluster").status_code == 401
        r = c.post("/login", data={"token": "s3cret-token", "csrf": csrf(c),
                                   "next": "//evil.example/"}, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/"
        assert "s3cret-token" not in r.headers["set-cookie"]
        assert "HttpOnly" in r.headers["set-cookie"] and "SameSite=Strict" in \
            r.headers["set-cookie"]
        assert c.get("/api/cluster").status_code == 200
        assert c.get(f"/topics/{guarded_topic}").status_code == 200
        c.post("/logout", data={"csrf": csrf(c)})
        assert c.get("/api/cluster").status_code == 401


def test_security_headers_and_no_inline_script(client, guarded_topic):
    for path in ("/", f"/topics/{guarded_topic}/messages", "/api/cluster",
                 "/static/console.js"):
        r = client.get(path)
        assert r.headers["content-security-policy"] == CSP, path
        assert r.headers["x-frame-options"] == "DENY"
        assert r.headers["x-content-type-options"] == "nosniff"
    assert "'unsafe-inline'" not in CSP and "script-src 'self'" in CSP
    html = client.get(f"/topics/{guarded_topic}/messages").text
    assert not re.search(r"<script(?![^>]*\bsrc=)", html)        # no inline script
    assert " on" not in re.sub(r"<[^>]*>", lambda m: "" if not re.search(
        r"\son[a-z]+=", m.group(0)) else " on", html)            # no inline handlers
    assert "style=" not in html
    fresh = TestClient(client.app)     # a browser without the cookie yet (no second lifespan)
    set_cookie = fresh.get("/api/health").headers["set-cookie"]
    assert set_cookie.startswith("gregor_console_csrf=") and "SameSite=Strict" in set_cookie
    assert "HttpOnly" in set_cookie


def test_loopback_console_refuses_other_host_names(console_broker):
    from gregor.console.security import LOOPBACK_HOSTS
    app = create_app(settings_for(console_broker), allowed_hosts=LOOPBACK_HOSTS)
    with TestClient(app, base_url="http://127.0.0.1:8080") as c:
        assert c.get("/api/health").status_code == 200
        assert c.get("/api/health", headers={"host": "localhost:8080"}).status_code == 200
        r = c.get("/api/health", headers={"host": "attacker.example:8080"})
        assert r.status_code == 421


def test_banner_when_the_broker_goes_away_and_recovery(tmp_path):
    b = BrokerProcess(tmp_path / "data")
    b.start()
    try:
        app = create_app(settings_for(b, request_timeout_s=2.0, lag_interval_s=0.5))
        with TestClient(app) as c:
            assert c.get("/api/health").json()["ok"]
            assert 'id="broker-banner" class="banner" hidden' in c.get("/").text
            b.stop()
            h = wait_for(lambda: (lambda h: h if not h["ok"] else None)(
                c.get("/api/health").json()), what="the health check to fail")
            assert h["error"] and h["down_since"]
            r = c.get("/topics")
            assert r.status_code == 503 and "The broker cannot be reached" in r.text
            assert 'id="broker-banner" class="banner" role="alert"' in r.text
            assert c.get("/api/topics").status_code == 503
            b.start()
            wait_for(lambda: c.get("/api/health").json()["ok"], timeout=30,
                     what="the console to see the broker again")
            r = c.get("/topics")
            assert r.status_code == 200 and 'class="banner" hidden' in r.text
    finally:
        b.stop()


def test_cli_prints_the_ready_line_and_serves(console_broker):
    proc = subprocess.Popen(
        [sys.executable, "-m", "gregor", "console", "--bootstrap-server",
         console_broker.bootstrap, "--listen", "127.0.0.1:0", "--read-only"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(REPO_ROOT))
    try:
        line = proc.stdout.readline()
        m = re.fullmatch(r"gregor console ready on (http://127\.0\.0\.1:\d+)\n", line)
        assert m, line
        r = httpx.get(m.group(1) + "/api/cluster", timeout=10)
        assert r.status_code == 200 and r.json()["brokers"]
        r = httpx.post(m.group(1) + "/api/topics", json={"name": "x"}, timeout=10)
        assert r.status_code == 403
        r = httpx.get(m.group(1) + "/api/cluster", headers={"host": "rebind.example"})
        assert r.status_code == 421
    finally:
        proc.terminate()
        proc.wait(15)


def test_cli_rejects_a_bad_listen_address():
    r = subprocess.run([sys.executable, "-m", "gregor", "console", "--listen", "nowhere"],
                       capture_output=True, text=True, cwd=str(REPO_ROOT), timeout=60)
    assert r.returncode == 2 and "expected HOST:PORT" in r.stderr


def test_live_console_fixture_serves(console_broker):
    with LiveConsole(settings_for(console_broker)) as live:
        assert httpx.get(live.url + "/api/health", timeout=10).json()["ok"]
