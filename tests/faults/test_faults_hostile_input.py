"""Hostile bytes on the wire: the broker closes the offending connection, stays up, keeps its
memory bounded, and serves real clients afterwards."""
from __future__ import annotations

import random
import socket
import struct
import threading
import time

import pytest

from tests.faults import frames
from tests.faults.checks import (assert_alive, read_whole_partition, real_client_roundtrip,
                                 tracebacks)

pytestmark = pytest.mark.interop

CLOSE_TIMEOUT_S = 10.0  # how long a broker may take to drop a bad connection (only a bound)
FUZZ_FRAMES = 10_000
FUZZ_THREADS = 4
FUZZ_DEADLINE_S = 180.0
# A broker that allocated what a hostile size prefix or length field claims (up to 2 GiB) would
# grow by far more than this; legitimate buffers for these small frames stay far below it.
RSS_GROWTH_LIMIT = 300 * 1024 * 1024


def expect_closed(b, payload: bytes, what: str) -> None:
    with frames.connect(b.port) as s:
        try:
            s.sendall(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # already closed: fine
        assert frames.closed_by_peer(s, CLOSE_TIMEOUT_S), f"{what}: the connection stayed open"
    assert_alive(b)


def test_http_get_is_closed(fault_broker):
    # "GET " read as a size prefix is 1,195,725,856 bytes: far past socket.request.max.bytes.
    expect_closed(fault_broker, frames.HTTP_GET, "HTTP GET")


@pytest.mark.parametrize("prefix", [-1, -0x80000000, 0x7FFFFFFF, 200_000_000])
def test_negative_or_oversized_size_prefix_is_closed(fault_broker, prefix):
    before = frames.rss_bytes(fault_broker.pid)
    expect_closed(fault_broker, struct.pack(">i", prefix) + b"\x00" * 64, f"size {prefix}")
    assert frames.rss_bytes(fault_broker.pid) - before < RSS_GROWTH_LIMIT


@pytest.mark.parametrize("api_key", [-1, 99, 1000, 32767])
def test_unknown_api_key_is_closed(fault_broker, api_key):
    expect_closed(fault_broker, frames.frame(api_key, 0, 1, b""), f"api key {api_key}")


def test_unsupported_version_is_closed(fault_broker):
    # Metadata at version 999 (ApiVersions is the one API that answers instead, see below).
    expect_closed(fault_broker, frames.frame(3, 999, 1, frames.i32(-1)), "Metadata v999")


def test_truncated_body_is_closed(fault_broker):
    good = frames.produce_v3(1, "truncated", 0, frames.record_batch([b"x" * 100]))
    for cut in (14, 20, 40, len(good) - 30):
        expect_closed(fault_broker, frames.i32(cut - 4) + good[4:cut], f"produce cut at {cut}")


def test_api_versions_at_unknown_version_answers_35_and_keeps_the_connection(fault_broker):
    """As real clients rely on: an UNSUPPORTED_VERSION answer in the v0 body format listing the
    supported versions, then the same connection serves a lower version."""
    # header v2 (flexible): client_id, empty tagged fields; body: compact strings + tags
    body = b"\x07gregor\x041.0\x00"
    req = (frames.i16(18) + frames.i16(99) + frames.i32(77) + frames.string("probe") + b"\x00"
           + body)
    with frames.connect(fault_broker.port) as s:
        s.sendall(frames.i32(len(req)) + req)
        corr, resp = frames.read_response(s)
        assert corr == 77
        (error,) = struct.unpack(">h", resp[:2])
        assert error == 35, f"error code {error}, expected UNSUPPORTED_VERSION (35)"
        (n,) = struct.unpack(">i", resp[2:6])
        assert 0 < n < 100 and len(resp) >= 6 + 6 * n, "v0 body must list the supported APIs"
        apis = {struct.unpack(">h", resp[6 + 6 * i:8 + 6 * i])[0]: struct.unpack(
            ">hh", resp[8 + 6 * i:12 + 6 * i]) for i in range(n)}
        assert 18 in apis, f"ApiVersions itself missing from {apis}"
        s.sendall(frames.api_versions_v0(78))
        corr, resp = frames.read_response(s)
        assert corr == 78 and resp[:2] == b"\x00\x00", "the connection did not serve v0 after 35"


@pytest.mark.parametrize("codec,size", [(1, 512 << 20), (3, 200 << 20), (4, 1 << 30)],
                         ids=["gzip-512MiB", "lz4-200MiB", "zstd-1GiB"])
def test_decompression_bomb_is_rejected_with_bounded_memory(fault_broker, codec, size):
    """A batch under message.max.bytes whose records section inflates to hundreds of MiB of
    zeros: rejected (or the connection closed) without the broker holding it all."""
    b = fault_broker
    bomb = frames.produce_v3(1, "bombed", 0, frames.decompression_bomb(codec, size))
    with frames.connect(b.port) as s:
        s.sendall(frames.create_topics_v0(9, "bombed"))
        frames.read_response(s)
    baseline = frames.rss_bytes(b.pid)
    peak = [baseline]
    stop = threading.Event()

    def watch():
        while not stop.wait(0.01):
            try:
                peak[0] = max(peak[0], frames.rss_bytes(b.pid))
            except (OSError, RuntimeError):
                return
    w = threading.Thread(target=watch, daemon=True)
    w.start()
    try:
        with frames.connect(b.port, timeout=60) as s:
            s.sendall(bomb)
            try:
                corr, body = frames.read_response(s)
                error = frames.produce_v3_error(body)
                assert error in (2, 87), f"a decompression bomb got error {error}, expected " \
                    "CORRUPT_MESSAGE (2) or INVALID_RECORD (87)"
            except ConnectionError:
                pass  # closing the connection is an acceptable answer too
    finally:
        stop.set()
        w.join(5)
    assert peak[0] - baseline < RSS_GROWTH_LIMIT, (
        f"broker RSS grew from {baseline >> 20} MiB to {peak[0] >> 20} MiB on a bomb of "
        f"{size >> 20} MiB")
    assert_alive(b)


def _fuzz_worker(port, seeds, rnd, counters, lock, stop):
    corr = 1000
    while not stop.is_set():
        with lock:
            if counters["frames"] >= FUZZ_FRAMES:
                return
        try:
            s = frames.connect(port, timeout=5)
        except OSError as e:
            with lock:
                counters["connect_errors"] += 1
                counters["last_connect_error"] = repr(e)
            time.sleep(0.05)
            continue
        sent = 0
        try:
            batch = []
            for _ in range(rnd.randrange(0, 3)):  # a little valid traffic first
                batch.append(rnd.choice(seeds))
            for _ in range(rnd.randrange(1, 8)):
                r = rnd.random()
                if r < 0.25:  # gets past the CRC check: the record validation must hold
                    batch.append(frames.produce_v3(corr, "fuzzed", 0,
                                                   frames.crc_valid_hostile_batch(rnd),
                                                   acks=rnd.choice([0, 1, -1])))
                elif r < 0.28:
                    batch.append(frames.HTTP_GET)
                elif r < 0.31:
                    batch.append(frames.i32(-rnd.randrange(1, 1 << 31)) + rnd.randbytes(8))
                else:
                    batch.append(frames.mutate(rnd, rnd.choice(seeds)))
            for f in batch:
                corr += 1
                s.sendall(f)
                sent += 1
            s.shutdown(socket.SHUT_WR)
            frames.closed_by_peer(s, 1.0)  # read whatever comes back, briefly
        except OSError:
            pass  # the broker dropped us mid-send: expected for hostile frames
        finally:
            s.close()
            with lock:
                counters["frames"] += sent
                counters["connections"] += 1


def test_fuzz_ten_thousand_hostile_frames_then_a_real_client_works(fault_broker):
    b = fault_broker
    topic = "fuzzed"
    seeds = frames.seed_frames(topic)
    with frames.connect(b.port) as s:  # make the topic exist; warm up
        s.sendall(frames.create_topics_v0(1, topic))
        frames.read_response(s)
        for f in seeds[:4]:  # one well-formed batch per codec: all accepted
            s.sendall(f)
            _, body = frames.read_response(s)
            assert frames.produce_v3_error(body) == 0, f"seed produce error {body.hex()}"
    baseline = frames.rss_bytes(b.pid)
    peak = [baseline]
    stop = threading.Event()

    def watch_memory():
        while not stop.wait(0.05):
            try:
                peak[0] = max(peak[0], frames.rss_bytes(b.pid))
            except (OSError, RuntimeError):
                return

    watcher = threading.Thread(target=watch_memory, daemon=True)
    watcher.start()
    counters = {"frames": 0, "connections": 0, "connect_errors": 0, "last_connect_error": None}
    lock = threading.Lock()
    workers = [threading.Thread(target=_fuzz_worker, daemon=True,
                                args=(b.port, seeds, random.Random(1234 + i), counters, lock, stop))
               for i in range(FUZZ_THREADS)]
    for w in workers:
        w.start()
    deadline = time.monotonic() + FUZZ_DEADLINE_S
    for w in workers:
        w.join(max(0.1, deadline - time.monotonic()))
    stop.set()
    watcher.join(5)
    print(f"fuzz: {counters}; RSS {baseline >> 20} MiB -> peak {peak[0] >> 20} MiB")
    assert b.proc.poll() is None, f"the broker died during the fuzz:\n{b.log_text()[-3000:]}"
    assert counters["frames"] >= FUZZ_FRAMES, (
        f"only {counters['frames']} frames sent in {FUZZ_DEADLINE_S}s: {counters}")
    assert counters["connect_errors"] < counters["connections"] // 100 + 5, (
        f"the broker refused connections during the fuzz: {counters}")
    assert peak[0] - baseline < RSS_GROWTH_LIMIT, (
        f"broker RSS grew from {baseline >> 20} MiB to {peak[0] >> 20} MiB under hostile input")
    assert_alive(b)
    real_client_roundtrip(b.bootstrap, "after-fuzz")
    # every record the fuzz got appended must still be readable and pass its CRC check
    read_whole_partition(b.bootstrap, topic)
    tb = tracebacks(b)
    assert not tb, f"{len(tb)} tracebacks in the broker output, first:\n{tb[0]}"


BAD_TOPIC_NAMES = ["../escaped", "a/b", "..", ".", "", "x" * 250, "with space", "t\x00nul",
                   "\u00fcnicode", "../../../../tmp/gregor-escape"]


def test_invalid_topic_names_are_refused_and_touch_nothing_outside_the_data_dir(fault_broker):
    """Kafka's rule: 1-249 characters of [a-zA-Z0-9._-], and not "." or "..". CreateTopics and
    auto-creating Metadata answer INVALID_TOPIC_EXCEPTION (17); no directory appears where a
    naive "<data dir>/<topic>-<partition>" join would put it."""
    b = fault_broker
    with frames.connect(b.port) as s:
        for i, name in enumerate(BAD_TOPIC_NAMES):
            s.sendall(frames.create_topics_v0(100 + i, name))
            corr, body = frames.read_response(s)
            # CreateTopics v0 response: [name, error_code]
            (n,) = struct.unpack(">i", body[:4])
            (name_len,) = struct.unpack(">h", body[4:6])
            (error,) = struct.unpack(">h", body[6 + name_len:8 + name_len])
            assert (corr, n, error) == (100 + i, 1, 17), (
                f"CreateTopics {name!r}: error {error}, expected INVALID_TOPIC_EXCEPTION (17)")
            s.sendall(frames.metadata_v1(200 + i, [name]))  # v1 auto-creates when allowed
            corr, body = frames.read_response(s)
            assert corr == 200 + i
    data_dir = getattr(b, "data_dir", None)
    if data_dir is not None:
        for name in BAD_TOPIC_NAMES:
            if "\x00" in name or not name.strip("."):
                continue
            for candidate in (data_dir / name, data_dir / f"{name}-0"):
                assert not candidate.resolve().exists() or candidate.resolve() == data_dir, (
                    f"invalid topic name {name!r} created {candidate.resolve()}")
    assert_alive(b)
