"""`gregor perf produce|consume`: throughput and latency tests in the manner of Kafka's
producer and consumer perf-test tools.

    gregor perf produce perf --num-records 100000 --record-size 100 --throughput -1 \
        --producer-props acks=1 linger.ms=5
    gregor perf consume perf --num-records 100000

Produce latency is send() to acknowledgement per record; consume latency is the time each
poll() that returned records took. Both print records/s, MB/s and avg / p50 / p95 / p99 / max.
"""
from __future__ import annotations

import os
import threading
import time

import click

from .client_options import (bootstrap_option, client_config, load_producer_class,
                             parse_props, with_friendly_errors)

_MB = 1024 * 1024
# Kafka's tool reports every 5 s; keep the same rhythm.
_REPORT_INTERVAL = 5.0


def percentiles(latencies_ms: list[float]) -> dict:
    """avg, p50, p95, p99, p99.9 and max of a list of latencies (ms)."""
    if not latencies_ms:
        return {k: 0.0 for k in ("avg", "p50", "p95", "p99", "p99.9", "max")}
    s = sorted(latencies_ms)
    n = len(s)

    def at(q):
        return s[min(n - 1, int(q * n))]
    return {"avg": sum(s) / n, "p50": at(0.50), "p95": at(0.95), "p99": at(0.99),
            "p99.9": at(0.999), "max": s[-1]}


class Throttler:
    """Keeps the send rate at `per_sec` records/s (<= 0: unlimited) by sleeping when ahead,
    the way Kafka's ThroughputThrottler does."""

    def __init__(self, per_sec: float, start: float):
        self.per_sec = per_sec
        self.start = start

    def wait(self, sent: int, now: float) -> None:
        if self.per_sec <= 0:
            return
        ahead = sent / self.per_sec - (now - self.start)
        if ahead > 0.001:
            time.sleep(ahead)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def command():
    """Producer and consumer performance tests."""


class _Latencies:
    def __init__(self, n: int):
        self.lock = threading.Lock()
        self.ms: list[float] = []
        self.errors = 0
        self.first_error = None
        self.bytes = 0
        self.window: list[float] = []

    def callback_for(self, sent_at: float, size: int):
        def done(metadata, error):
            lat = (time.perf_counter() - sent_at) * 1000.0
            with self.lock:
                if error is None:
                    self.ms.append(lat)
                    self.window.append(lat)
                    self.bytes += size
                else:
                    self.errors += 1
                    self.first_error = self.first_error or error
        return done


def _line(records: int, elapsed: float, nbytes: int, stats: dict) -> str:
    rate = records / elapsed if elapsed > 0 else 0.0
    return (f"{records} records, {rate:,.1f} records/sec ({nbytes / _MB / elapsed if elapsed else 0:.2f}"
            f" MB/sec), {stats['avg']:.2f} ms avg latency, {stats['p50']:.2f} ms p50, "
            f"{stats['p95']:.2f} ms p95, {stats['p99']:.2f} ms p99, {stats['p99.9']:.2f} ms "
            f"p99.9, {stats['max']:.2f} ms max")


@command.command("produce")
@click.argument("topic")
@click.option("--num-records", "-n", type=int, required=True, help="Records to send.")
@click.option("--record-size", "-s", type=int, default=100, show_default=True,
              help="Value size in bytes.")
@click.option("--key-size", type=int, default=0, show_default=True,
              help="Key size in bytes (0: no key).")
@click.option("--throughput", "-t", type=float, default=-1, show_default=True,
              help="Target records/sec (-1: as fast as possible).")
@click.option("--producer-props", "props", multiple=True, metavar="KEY=VALUE",
              help="Producer config (repeatable; several in one argument separated by spaces).")
@click.option("--batch-api", is_flag=True,
              help="Use send_batch() in chunks of 10000 instead of send() per record.")
@bootstrap_option
@with_friendly_errors
def produce(topic, num_records, record_size, key_size, throughput, props, batch_api,
            bootstrap):
    """Send --num-records records of --record-size bytes and report throughput and latency."""
    Producer = load_producer_class()
    cfg = client_config(bootstrap, parse_props([p for item in props for p in item.split()],
                                               "--producer-props"))
    producer = Producer(cfg)
    value = os.urandom(record_size)
    lat = _Latencies(num_records)
    start = time.perf_counter()
    throttle = Throttler(throughput, start)
    last_report = start
    sent = 0
    try:
        if batch_api:
            chunk = 10_000
            while sent < num_records:
                n = min(chunk, num_records - sent)
                keys = [os.urandom(key_size) for _ in range(n)] if key_size else None
                t0 = time.perf_counter()
                res = producer.send_batch(topic, [value] * n, keys=keys)
                _wait_batch(res)
                with lat.lock:
                    lat.ms.append((time.perf_counter() - t0) * 1000.0)
                    lat.bytes += n * record_size
                sent += n
                throttle.wait(sent, time.perf_counter())
        else:
            for i in range(num_records):
                key = os.urandom(key_size) if key_size else None
                now = time.perf_counter()
                producer.send(topic, value=value, key=key,
                              callback=lat.callback_for(now, record_size))
                sent += 1
                if throughput > 0:
                    throttle.wait(sent, now)
                if now - last_report >= _REPORT_INTERVAL:
                    with lat.lock:
                        window, lat.window = lat.window, []
                    click.echo(_line(len(window), now - last_report, len(window) * record_size,
                                     percentiles(window)))
                    last_report = now
        producer.flush()
    finally:
        producer.close()
    elapsed = time.perf_counter() - start
    stats = percentiles(lat.ms)
    click.echo(_line(num_records - lat.errors, elapsed, lat.bytes, stats)
               + (" (latency per send_batch call)" if batch_api else ""))
    if lat.errors:
        raise click.ClickException(f"{lat.errors} records failed; first error: "
                                   f"{lat.first_error}")


def _wait_batch(res) -> None:
    """send_batch may return one future, a list of futures, or nothing."""
    if res is None:
        return
    if hasattr(res, "result"):
        res.result()
        return
    for f in res:
        if hasattr(f, "result"):
            f.result()


@command.command("consume")
@click.argument("topic")
@click.option("--num-records", "--messages", "-n", "num_records", type=int, required=True,
              help="Records to read.")
@click.option("--from-latest", is_flag=True,
              help="Start at the end instead of the beginning.")
@click.option("--timeout", type=float, default=30.0, show_default=True,
              help="Give up when no record arrives for this many seconds.")
@click.option("--batches", is_flag=True, help="Read with poll_batches() (the bulk path).")
@click.option("--consumer-props", "props", multiple=True, metavar="KEY=VALUE",
              help="Consumer config (repeatable).")
@bootstrap_option
@with_friendly_errors
def consume(topic, num_records, from_latest, timeout, batches, props, bootstrap):
    """Read --num-records records and report throughput and poll latency."""
    from ..client.consumer import Consumer

    cfg = client_config(bootstrap, parse_props([p for item in props for p in item.split()],
                                               "--consumer-props"))
    consumer = Consumer(cfg)
    count, nbytes, polls = 0, 0, []
    try:
        parts = consumer.partitions_for_topic(topic)
        consumer.assign([(topic, p, -1 if from_latest else -2) for p in parts])
        start = time.perf_counter()
        last_data = start
        while count < num_records:
            t0 = time.perf_counter()
            if batches:
                got = consumer.poll_batches(1.0)
                n = sum(len(b) for b in got)
                size = sum(sum(len(v) for v in b.values if v is not None) for b in got)
            else:
                got = consumer.poll(1.0)
                n = len(got)
                size = sum(len(r.value) for r in got if r.value is not None)
            t1 = time.perf_counter()
            if n:
                polls.append((t1 - t0) * 1000.0)
                count += n
                nbytes += size
                last_data = t1
            elif t1 - last_data > timeout:
                break
        elapsed = time.perf_counter() - start
    finally:
        consumer.close()
    click.echo(_line(count, elapsed, nbytes, percentiles(polls)) + " (latency per poll)")
    if count < num_records:
        raise click.ClickException(f"only {count} of {num_records} records arrived within "
                                   f"{timeout} s of the last one")
