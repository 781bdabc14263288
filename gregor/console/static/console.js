// gregor console: the only script. No framework, no build step; the page works without it
// except for the live parts (broker banner, live tail, chart refresh). Record data is only
// ever put into the page with textContent, never as HTML.
"use strict";

(function () {
  function $(id) { return document.getElementById(id); }

  // The broker banner: ask the console every few seconds whether the broker answers.
  function watchBroker() {
    var banner = $("broker-banner"), text = $("broker-banner-text");
    if (!banner) return;
    function check() {
      fetch("/api/health", {credentials: "same-origin", cache: "no-store"})
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (h) {
          if (!h) return;
          banner.hidden = !!h.ok;
          if (text) text.textContent = h.ok ? "" : (h.error || "");
        })
        .catch(function () {});
    }
    setInterval(check, 3000);
  }

  function cell(row, text, cls) {
    var td = document.createElement("td");
    if (cls) td.className = cls;
    td.textContent = text === null || text === undefined ? "null" : String(text);
    row.appendChild(td);
    return td;
  }

  // The live tail: records arrive as server-sent events and are added to the top of a table.
  function liveTail() {
    var box = $("tail");
    if (!box) return;
    var start = $("tail-start"), stop = $("tail-stop"), status = $("tail-status");
    var rows = $("tail-rows"), source = null, topic = box.dataset.url;
    var MAX_ROWS = 500;
    function setStatus(s) { status.textContent = s; box.dataset.state = s; }
    function close() {
      if (source) source.close();
      source = null;
      start.hidden = false; stop.hidden = true; setStatus("stopped");
    }
    start.addEventListener("click", function () {
      if (source) return;
      source = new EventSource(topic);
      start.hidden = true; stop.hidden = false; setStatus("connecting");
      source.addEventListener("ready", function () { setStatus("live"); });
      source.addEventListener("record", function (ev) {
        var r = JSON.parse(ev.data);
        var tr = document.createElement("tr");
        cell(tr, r.partition, "n");
        var off = cell(tr, "", "n"), a = document.createElement("a");
        a.href = topic.replace(/\/tail(\?.*)?$/, "/messages/" + r.partition + "/" + r.offset);
        a.textContent = String(r.offset);
        off.appendChild(a);
        cell(tr, r.time || "-", "nowrap");
        cell(tr, r.key, "mono");
        cell(tr, (r.value === null ? "null" : r.value) + (r.value_truncated ? "…" : ""),
             "mono value");
        rows.insertBefore(tr, rows.firstChild);
        while (rows.children.length > MAX_ROWS) rows.removeChild(rows.lastChild);
      });
      source.addEventListener("error", function (ev) {
        if (ev.data) { setStatus("error: " + JSON.parse(ev.data).error); }
        else if (source && source.readyState === EventSource.CONNECTING) {
          setStatus("reconnecting");
        }
      });
    });
    stop.addEventListener("click", close);
  }

  // Charts drawn by the server as SVG images: reload them as new samples come in.
  function refreshCharts() {
    var imgs = document.querySelectorAll("img[data-refresh]");
    imgs.forEach(function (img) {
      var base = img.getAttribute("src").split("?")[0];
      var every = Math.max(1, parseFloat(img.dataset.refresh || "5")) * 1000;
      setInterval(function () { img.src = base + "?t=" + Date.now(); }, every);
    });
  }

  // Sample times are sent as epoch seconds; show them in the browser's time zone.
  function localTimes() {
    document.querySelectorAll(".localtime[data-ts]").forEach(function (el) {
      el.textContent = new Date(parseFloat(el.dataset.ts) * 1000).toLocaleTimeString();
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    watchBroker(); liveTail(); refreshCharts(); localTimes();
  });
})();
