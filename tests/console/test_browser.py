"""The console in a real headless Chromium (Debian's chromium + chromium-driver, driven by
selenium): the cluster page, a topic, a search, the live tail receiving a record produced
during the test, a group's offset reset changing its lag, the lag chart, read-only mode, and a
record value `<script>` shown as text. Saves screenshots of the main pages into a temporary
directory, or into docs/console/ (the pictures docs/console.md shows) when
GREGOR_UPDATE_SCREENSHOTS=1, so a test run leaves the checkout as it found it.

Skips when Chromium or its driver is missing, and fails instead under CI=true (CI installs them
with .ci/install-system-packages).
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from tests.console.conftest import (LiveConsole, commit_group, produce, settings_for, unique,
                                    wait_for)
from tests.support.broker import REPO_ROOT

CHROMIUM = os.environ.get("GREGOR_CHROMIUM", "/usr/bin/chromium")
DRIVER = os.environ.get("GREGOR_CHROMEDRIVER", "/usr/bin/chromedriver")
SHOTS = (REPO_ROOT / "docs" / "console" if os.environ.get("GREGOR_UPDATE_SCREENSHOTS") == "1"
         else Path(tempfile.mkdtemp(prefix="gregor-console-shots-")))
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1280,860", "--hide-scrollbars"]


def _missing() -> str | None:
    for path in (CHROMIUM, DRIVER):
        if not (Path(path).exists() and os.access(path, os.X_OK)):
            return f"{path} is missing (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


@pytest.fixture(scope="module")
def driver():
    why = _missing()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser tests cannot run under CI: {why}")
        pytest.skip(why)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="gregor-console-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in FLAGS + [f"--user-data-dir={profile}"]:
        opts.add_argument(flag)
    d = webdriver.Chrome(service=Service(DRIVER), options=opts)
    d.set_page_load_timeout(30)
    try:
        yield d
    finally:
        d.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def live(console_broker):
    metrics = f"http://127.0.0.1:{console_broker.metrics_port}/metrics"
    with LiveConsole(settings_for(console_broker, lag_interval_s=1.0,
                                  metrics_url=metrics)) as c:
        yield c


@pytest.fixture(scope="module")
def shop(console_broker):
    """A topic of JSON orders (a few ERRORs, one hostile value) and a group behind on it."""
    from gregor import AdminClient
    topic = unique("orders")
    with AdminClient({"bootstrap.servers": console_broker.bootstrap}) as a:
        a.create_topics([topic], num_partitions=3)
    records = []
    for i in range(60):
        value = {"order": i, "customer": f"c-{i % 7}", "amount": round(9.5 * (i % 11), 2),
                 "status": "ERROR card declined" if i % 13 == 0 else "ok"}
        records.append((f"order-{i}".encode(), json.dumps(value).encode(),
                        [("source", b"web" if i % 2 else b"app")], i % 3))
    records.append((b"evil", b'<script>window.__xss=1</script><img src=x onerror="window.__xss=2">',
                    [("h", b"<b>bold?</b>")], 0))
    produce(console_broker, topic, records)
    group = unique("billing")
    commit_group(console_broker, group, topic, {0: 5, 1: 12, 2: 3})
    return {"topic": topic, "group": group}


def wait_css(d, css: str, timeout: float = 15.0):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(d, timeout).until(ec.presence_of_element_located((By.CSS_SELECTOR,
                                                                           css)))


def text_of(d, css: str) -> str:
    return wait_css(d, css).text


def shot(d, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    height = d.execute_script(
        "return Math.min(document.documentElement.scrollHeight, 2400)")
    d.set_window_size(1280, max(700, int(height) + 20))
    d.save_screenshot(str(SHOTS / f"{name}.png"))
    d.set_window_size(1280, 860)


def test_cluster_page(driver, live, shop):
    driver.get(live.url + "/")
    assert text_of(driver, "#broker-count") == "1"
    assert int(text_of(driver, "#topic-count")) >= 1
    assert driver.find_element("id", "broker-banner").get_attribute("hidden") is not None
    shot(driver, "cluster")


def test_topic_pages(driver, live, shop):
    driver.get(live.url + "/topics")
    wait_css(driver, f'a[href="/topics/{shop["topic"]}"]').click()
    assert text_of(driver, "#topic-name") == shop["topic"]
    rows = driver.find_elements("css selector", "#partitions tbody tr")
    assert len(rows) == 3

    def group_listed():
        # the page lists the groups of the lag sampler's latest sample, taken every second
        found = driver.find_elements("css selector", "#topic-groups")
        if found and shop["group"] in found[0].text:
            return True
        time.sleep(0.5)
        driver.refresh()
        return False
    wait_for(group_listed, what="the group on the topic page")
    shot(driver, "topic")


def test_search_messages(driver, live, shop):
    driver.get(live.url + f"/topics/{shop['topic']}/messages")
    box = wait_css(driver, "#search-q")
    box.send_keys("ERROR card")
    driver.find_element("id", "browse-submit").click()
    info = text_of(driver, "#search-info")
    assert info.startswith("5 matches in 61 records scanned"), info
    values = [e.text for e in driver.find_elements("css selector", "#records td.value")]
    assert len(values) == 5 and all("ERROR card declined" in v for v in values)
    shot(driver, "messages-search")


def test_record_value_with_script_shows_as_text(driver, live, shop):
    driver.get(live.url + f"/topics/{shop['topic']}/messages?partition=0&q=evil&fields=key")
    cell = wait_css(driver, "#records td.value")
    assert cell.text.startswith("<script>window.__xss=1</script><img src=x")
    assert "<b>bold?</b>" in driver.find_element("css selector", "#records").text
    assert driver.execute_script("return window.__xss === undefined")
    driver.get(live.url + f"/topics/{shop['topic']}/messages/0/20")
    assert text_of(driver, "#record-value").startswith("<script>window.__xss=1</script>")
    assert driver.execute_script("return window.__xss === undefined")


def test_live_tail_receives_a_record(driver, live, shop, console_broker):
    driver.get(live.url + f"/topics/{shop['topic']}/messages")
    wait_css(driver, "#tail-start").click()
    wait_for(lambda: driver.find_element("id", "tail-status").text == "live",
             what="the tail to be live")
    produce(console_broker, shop["topic"], [(b"tail-key", b'{"order": 999, "status": "new"}',
                                             None, 2)])
    wait_for(lambda: driver.find_elements("css selector", "#tail-rows tr"),
             what="the record in the tail")
    row = driver.find_element("css selector", "#tail-rows tr").text
    assert "tail-key" in row and '"order": 999' in row
    driver.find_element("id", "tail-stop").click()
    assert driver.find_element("id", "tail-status").text == "stopped"


def test_reset_offsets_changes_lag_and_chart_renders(driver, live, shop, console_broker):
    gid = shop["group"]
    import httpx

    def samples():
        return len(httpx.get(f"{live.url}/api/groups/{gid}", timeout=10).json()["history"])
    for i in range(4):        # the lag grows between samples: the chart has a shape
        n = samples()
        produce(console_broker, shop["topic"], [(None, b'{"late": true}', None, i % 3)] * 6)
        wait_for(lambda: samples() > n, what="a new lag sample")
    driver.get(live.url + "/groups")
    wait_css(driver, f'a[href="/groups/{gid}"]')
    shot(driver, "groups")
    driver.get(live.url + f"/groups/{gid}")
    before = int(text_of(driver, "#total-lag").replace(",", ""))
    assert before > 0
    wait_for(lambda: driver.execute_script(
        "var i = document.getElementById('lag-chart'); return i.complete && i.naturalWidth"),
        what="the lag chart to load")
    shot(driver, "group")
    from selenium.webdriver.support.ui import Select
    Select(driver.find_element("id", "reset-strategy")).select_by_value("latest")
    driver.find_element("id", "reset-dry-run").click()
    plan = text_of(driver, "#reset-plan")
    assert "Lag after" in plan
    shot(driver, "reset-dry-run")
    driver.find_element("id", "reset-execute").click()
    assert "Reset 3 partition(s)" in text_of(driver, ".flash.ok")
    assert text_of(driver, "#total-lag") == "0"


def test_transactions_page(driver, live, shop):
    driver.get(live.url + "/transactions")
    assert text_of(driver, "#open-count").isdigit()
    shot(driver, "transactions")


def test_dark_theme_follows_the_browser(driver, live, shop):
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {
        "features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    try:
        driver.get(live.url + f"/topics/{shop['topic']}/messages?view=json&limit=4")
        wait_css(driver, "#records")
        bg = driver.execute_script("return getComputedStyle(document.body).backgroundColor")
        assert bg == "rgb(18, 21, 27)", bg
        shot(driver, "messages-dark")
    finally:
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    driver.get(live.url + "/")
    bg = driver.execute_script("return getComputedStyle(document.body).backgroundColor")
    assert bg == "rgb(255, 255, 255)", bg


def test_read_only_mode(driver, console_broker, shop):
    with LiveConsole(settings_for(console_broker, read_only=True)) as ro:
        driver.get(ro.url + f"/topics/{shop['topic']}/messages")
        assert text_of(driver, "#read-only-badge") == "read-only"
        assert driver.find_elements("id", "produce-form") == []
        driver.get(ro.url + f"/groups/{shop['group']}/reset?strategy=earliest")
        wait_css(driver, "#reset-plan")
        assert driver.find_elements("id", "reset-execute") == []
        status = driver.execute_async_script("""
            var done = arguments[arguments.length - 1];
            fetch('/api/topics/%s/produce', {method: 'POST',
                headers: {'content-type': 'application/json'}, body: '{"value": "x"}'})
              .then(function (r) { done(r.status); });""" % shop["topic"])
        assert status == 403
