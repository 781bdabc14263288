"""kcat (librdkafka's command-line client) against the broker.

kcat has no admin API, so its topics come from the broker's auto-create (Kafka's default
auto.create.topics.enable=true, num.partitions=1) on the first produce. It reads records as
"key<TAB>value" lines and applies the same -H headers to every record of one run, so the 10,000
records go in a few runs with different header sets, all to partition 0, where their offsets are
known: the n-th line produced is offset n. librdkafka stamps CreateTime itself, so timestamps are
checked to lie within the produce window and never to go backwards.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import time

import pytest

from tests.interop.dataset import CODECS, Delivered, Got, Rec, make_records, timestamp_probes
from tests.interop.dataset import verify_contents, verify_exact
from tests.interop.scenarios import CONSUME_TIMEOUT_S, PRODUCE_TIMEOUT_S
from tests.interop.targets import target_name
from tests.interop.wire import check_codec_used

KCAT = shutil.which("kcat") or shutil.which("kafkacat")
pytestmark = [
    pytest.mark.interop,
    pytest.mark.skipif(KCAT is None, reason="the kcat binary is not installed "
                                            "(apt-get install kcat; .ci/run installs it in CI)"),
]

RECORDS = 10_000
RUNS = 4  # kcat invocations per produce, each with its own header set
METADATA_TIMEOUT_S = "30"


def header_set(run: int, tag: str) -> tuple[tuple[str, bytes], ...]:
    headers = [("tag", tag.encode()), ("run", b"%d" % run)]
    if run % 2 == 0:
        headers.append(("run", b"again-%d" % run))  # header names may repeat
    if run == 1:
        headers.append(("empty", b""))
    if run == 3:
        headers = []  # and a run without any header
    return tuple(headers)


def kcat(*args: str, input: bytes | None = None, timeout: float = PRODUCE_TIMEOUT_S) -> bytes:
    proc = subprocess.run([KCAT, "-m", METADATA_TIMEOUT_S, *args], input=input,
                          capture_output=True, timeout=timeout)
    assert proc.returncode == 0, (f"kcat {' '.join(args)} exited {proc.returncode}:\n"
                                  f"{proc.stderr.decode(errors='replace')[-3000:]}")
    return proc.stdout


def produce(bootstrap: str, topic: str, codec: str, acks: str | None,
            n: int = RECORDS) -> tuple[list[Delivered], int, int]:
    """Produce n text records to partition 0; returns (delivered, first_ms, last_ms)."""
    tag = f"kcat-{codec}-{acks}"
    base = make_records(n, tag=tag, text=True)
    delivered = []
    t0 = int(time.time() * 1000)
    per_run = -(-n // RUNS)
    for run in range(RUNS):
        chunk = base[run * per_run:(run + 1) * per_run]
        headers = header_set(run, tag)
        args = ["-P", "-b", bootstrap, "-t", topic, "-p", "0", "-K", "\t", "-q"]
        if codec != "none":
            args += ["-z", codec]
        if acks is not None:
            args += ["-X", f"acks={acks}"]
        for name, value in headers:
            args += ["-H", f"{name}={value.decode()}"]
        kcat(*args, input=b"".join(r.key + b"\t" + r.value + b"\n" for r in chunk))
        for r in chunk:
            rec = Rec(r.key, r.value, headers, -1)  # timestamp: librdkafka's clock
            delivered.append(Delivered(rec, 0, len(delivered)))
    return delivered, t0, int(time.time() * 1000)


def consume(bootstrap: str, topic: str, count: int) -> list[Got]:
    out = kcat("-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-c", str(count), "-J",
               "-q", timeout=CONSUME_TIMEOUT_S)
    got = []
    for line in out.decode().splitlines():
        m = json.loads(line)
        assert m["tstype"] == "create", f"timestamp type {m['tstype']} at offset {m['offset']}"
        hs = m.get("headers") or []
        headers = tuple((hs[i], None if hs[i + 1] is None else hs[i + 1].encode())
                        for i in range(0, len(hs), 2))
        got.append(Got(m["partition"], m["offset"],
                       None if m["key"] is None else m["key"].encode(),
                       None if m["payload"] is None else m["payload"].encode(),
                       headers, m["ts"]))
    return got


def check_timestamps(consumed: list[Got], t0: int, t1: int) -> None:
    ordered = sorted(consumed, key=lambda g: (g.partition, g.offset))
    for g in ordered:
        assert t0 - 1000 <= g.timestamp <= t1 + 1000, (
            f"offset {g.offset}: timestamp {g.timestamp} outside the produce window [{t0}, {t1}]")
    ts = [g.timestamp for g in ordered]
    assert ts == sorted(ts), "CreateTime went backwards along the offsets"


def roundtrip(bootstrap: str, topic: str, codec: str, acks: str | None = None):
    delivered, t0, t1 = produce(bootstrap, topic, codec, acks)
    consumed = consume(bootstrap, topic, len(delivered))
    check_timestamps(consumed, t0, t1)
    # Now that the timestamps are known to be sane, compare everything else exactly.
    ts_at = {(g.partition, g.offset): g.timestamp for g in consumed}
    stamped = [Delivered(Rec(d.rec.key, d.rec.value, d.rec.headers,
                             ts_at.get((d.partition, d.offset), -1)), d.partition, d.offset)
               for d in delivered]
    if acks == "0":
        verify_contents([d.rec for d in stamped], consumed)
    else:
        verify_exact(stamped, consumed)
    if target_name() == "gregor":  # tansu answers raw Fetch v10 with no partitions
        check_codec_used(int(bootstrap.rsplit(":", 1)[1]), topic, 1, codec)
    metadata = json.loads(kcat("-L", "-b", bootstrap, "-t", topic, "-J", "-q"))
    (t,) = [t for t in metadata["topics"] if t["topic"] == topic]
    assert len(t["partitions"]) >= 1 and not t.get("error"), f"metadata for {topic}: {t}"
    return consumed


_results = {}


@pytest.mark.parametrize("codec", CODECS)
def test_roundtrip_every_codec_default_settings(target, topic_name, codec):
    _results[codec] = roundtrip(target.bootstrap, topic_name, codec), topic_name


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_roundtrip_every_acks(target, topic_name, acks):
    roundtrip(target.bootstrap, topic_name, "snappy", acks)


def query_offset(bootstrap: str, topic: str, partition: int, ts: int) -> int:
    out = json.loads(kcat("-Q", "-b", bootstrap, "-t", f"{topic}:{partition}:{ts}", "-J", "-q"))
    return int(out[topic][str(partition)]["offset"])


def test_list_offsets_earliest_latest_by_timestamp(target, topic_name):
    if "none" in _results:
        consumed, topic = _results["none"]
    else:
        consumed, topic = roundtrip(target.bootstrap, topic_name, "none"), topic_name
    # -2 and -1 are ListOffsets' EARLIEST and LATEST.
    assert query_offset(target.bootstrap, topic, 0, -2) == 0
    assert query_offset(target.bootstrap, topic, 0, -1) == len(consumed)
    for ts, want in timestamp_probes(consumed, 0):
        got = query_offset(target.bootstrap, topic, 0, ts)
        # librdkafka reports "no record at or after ts" as offset -1
        assert (None if got < 0 else got) == want, f"offset for timestamp {ts}: {got}, want {want}"
