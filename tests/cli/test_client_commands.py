"""`gregor topics | produce | consume | perf` end to end against a broker (click's CliRunner, in
process), plus the pure helpers (formats, percentiles, throttling) without one."""
from __future__ import annotations

import itertools
import json

import pytest
from click.testing import CliRunner

from gregor.cli.main import cli
from gregor.cli import consume as consume_mod
from gregor.cli.perf import Throttler, percentiles

_seq = itertools.count()


def run(args, input=None, ok=True):
    result = CliRunner().invoke(cli, args, input=input, catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    return result


def topic_name():
    return f"cli-{next(_seq)}"


# -- without a broker --------------------------------------------------------------------------

def test_every_client_command_is_registered():
    out = run(["--help"]).output
    for name in ("topics", "groups", "produce", "consume", "perf"):
        assert name in out
    assert "--bootstrap-server" in run(["consume", "--help"]).output
    assert "localhost:9092" in run(["topics", "list", "--help"]).output


def test_formats():
    from gregor.client.consumer import ConsumerRecord
    r = ConsumerRecord("t", 1, 5, 1000, 0, b"k", b"\xff\x00", [("h", b"v")])
    assert consume_mod.make_formatter("kv", "=")(r) == "k=\ufffd\x00"
    j = json.loads(consume_mod.make_formatter("json", "\t")(r))
    assert j["value"] == {"base64": "/wA="} and j["key"] == "k" and j["offset"] == 5
    assert j["headers"] == [["h", "v"]] and j["timestamp_type"] == "CreateTime"
    assert consume_mod.make_formatter("{partition}:{offset}:{key}", "")(r) == "1:5:k"
    with pytest.raises(Exception, match="bad template"):
        consume_mod.make_formatter("{nope}", "")


def test_percentiles_and_throttler():
    stats = percentiles([float(i) for i in range(1, 101)])
    assert stats["p50"] == 51.0 and stats["p99"] == 100.0 and stats["max"] == 100.0
    assert stats["avg"] == pytest.approx(50.5)
    assert percentiles([])["avg"] == 0.0
    slept = []
    t = Throttler(100.0, start=0.0)
    import gregor.cli.perf as perf_mod
    orig = perf_mod.time.sleep
    perf_mod.time.sleep = slept.append
    try:
        t.wait(50, now=0.2)    # 50 records at 100/s belong at 0.5 s: sleep 0.3 s
        t.wait(10, now=0.5)    # behind schedule: no sleep
    finally:
        perf_mod.time.sleep = orig
    assert slept == [pytest.approx(0.3)]


def test_unreachable_broker_is_a_one_line_error():
    r = run(["topics", "list", "--bootstrap-server", "127.0.0.1:1", "--timeout", "1"], ok=False)
    assert r.exit_code == 1
    assert "Error:" in r.output and "Traceback" not in r.output


# -- against a broker ---------------------------------------------------------------------------

needs_broker = pytest.mark.interop


@needs_broker
def test_topics_lifecycle(cli_broker):
    b = ["--bootstrap-server", cli_broker.bootstrap]
    t = topic_name()
    assert f"Created topic {t}." in run(["topics", "create", t, "--partitions", "3",
                                         "--config", "retention.ms=3600000"] + b).output
    again = run(["topics", "create", t] + b, ok=False)
    assert again.exit_code == 1 and "already exists" in again.output
    run(["topics", "create", t, "--if-not-exists"] + b)
    assert t in run(["topics", "list"] + b).output.split()
    desc = run(["topics", "describe", t] + b).output
    assert f"Topic: {t}" in desc and "PartitionCount: 3" in desc
    assert "retention.ms=3600000" in desc
    run(["topics", "alter", t, "--partitions", "5", "--config", "segment.bytes=2000000"] + b)
    desc = run(["topics", "describe", t] + b).output
    assert "PartitionCount: 5" in desc and "segment.bytes=2000000" in desc
    assert "retention.ms=3600000" in desc
    nothing = run(["topics", "alter", t] + b, ok=False)
    assert nothing.exit_code == 2 and "nothing to alter" in nothing.output
    missing = run(["topics", "describe", "no-such-topic-x"] + b, ok=False)
    assert missing.exit_code == 1 and "no-such-topic-x" in missing.output
    assert f"Deleted topic {t}." in run(["topics", "delete", t] + b).output
    assert t not in run(["topics", "list"] + b).output.split()


@needs_broker
def test_produce_then_consume(cli_broker, tmp_path):
    b = ["--bootstrap-server", cli_broker.bootstrap]
    t = topic_name()
    run(["topics", "create", t, "--partitions", "2"] + b)
    lines = "".join(f"key{i}:value {i}\n" for i in range(30))
    out = run(["produce", t, "--key-separator", ":", "--property", "acks=all",
               "--property", "linger.ms=1", "--header", "src=cli"] + b, input=lines)
    assert "Sent 30 records" in out.output
    f = tmp_path / "more.txt"
    f.write_text("plain-a\nplain-b\n")
    run(["produce", t, "--file", str(f), "--partition", "1", "--no-progress"] + b)
    got = run(["consume", t, "--from-beginning", "--max-messages", "32", "--format", "json",
               "--timeout-ms", "10000"] + b).output
    records = [json.loads(line) for line in got.splitlines() if line.startswith("{")]
    assert len(records) == 32
    keyed = sorted((r["key"], r["value"]) for r in records if r["key"] is not None)
    assert keyed == sorted((f"key{i}", f"value {i}") for i in range(30))
    assert all(r["headers"] == [["src", "cli"]] for r in records if r["key"] is not None)
    plain = [r for r in records if r["key"] is None]
    assert [r["value"] for r in plain] == ["plain-a", "plain-b"]
    assert {r["partition"] for r in plain} == {1}
    # one partition from an offset, stopping at the end
    one = run(["consume", t, "--partition", "1", "--offset", "0", "--exit-at-end",
               "--format", "{offset}={value}"] + b).output
    lines_p1 = [ln for ln in one.splitlines() if "=" in ln]
    assert lines_p1[0].startswith("0=") and lines_p1[-2:] == [
        f"{len(lines_p1) - 2}=plain-a", f"{len(lines_p1) - 1}=plain-b"]


@needs_broker
def test_consume_unknown_partition_is_an_error(cli_broker):
    b = ["--bootstrap-server", cli_broker.bootstrap]
    t = topic_name()
    run(["topics", "create", t] + b)
    r = run(["consume", t, "--partition", "7", "--max-messages", "1"] + b, ok=False)
    assert r.exit_code == 1 and "no [7]" in r.output
    r = run(["consume", "no-such-topic-y", "--max-messages", "1"] + b, ok=False)
    assert r.exit_code == 1 and "no-such-topic-y" in r.output
    assert "no-such-topic-y" not in run(["topics", "list"] + b).output  # not auto-created


@needs_broker
def test_perf_produce_and_consume(cli_broker):
    b = ["--bootstrap-server", cli_broker.bootstrap]
    t = topic_name()
    run(["topics", "create", t] + b)
    out = run(["perf", "produce", t, "--num-records", "2000", "--record-size", "50",
               "--throughput", "-1", "--producer-props", "acks=1 linger.ms=2"] + b).output
    assert "2000 records" in out and "records/sec" in out and "ms p99" in out
    out = run(["perf", "consume", t, "--num-records", "2000"] + b).output
    assert "2000 records" in out and "MB/sec" in out
    out = run(["perf", "consume", t, "--num-records", "2000", "--batches"] + b).output
    assert "2000 records" in out
