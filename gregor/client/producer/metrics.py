"""Producer metrics with Kafka's names. Counters are plain ints updated by the sender thread
(one writer); rates are over the time since the producer started."""
from __future__ import annotations

import time


class ProducerMetrics:
    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.started = clock()
        self.records_sent = 0
        self.records_failed = 0
        self.records_retried = 0
        self.batches = 0
        self.batch_bytes = 0
        self.queue_time_total = 0.0
        self.requests = 0
        self.request_latency_total = 0.0
        self.compression_ratio_total = 0.0

    def batch_sent(self, batch, now: float) -> None:
        self.batches += 1
        n = len(batch.data) if batch.data is not None else 0
        self.batch_bytes += n
        self.queue_time_total += max(0.0, batch.drained_at - batch.created)
        raw = batch.bytes_in or n
        self.compression_ratio_total += (n / raw) if raw else 1.0

    def snapshot(self, pool, network) -> dict:
        elapsed = max(self.clock() - self.started, 1e-9)
        b = max(self.batches, 1)
        return {
            "record-send-rate": self.records_sent / elapsed,
            "record-send-total": self.records_sent,
            "record-error-rate": self.records_failed / elapsed,
            "record-error-total": self.records_failed,
            "record-retry-rate": self.records_retried / elapsed,
            "record-retry-total": self.records_retried,
            "batch-size-avg": self.batch_bytes / b,
            "record-queue-time-avg": 1000.0 * self.queue_time_total / b,
            "request-latency-avg": 1000.0 * self.request_latency_total / max(self.requests, 1),
            "request-total": self.requests,
            "requests-in-flight": network.in_flight_count() if network is not None else 0,
            "buffer-available-bytes": pool.available,
            "buffer-total-bytes": pool.total,
            "bufferpool-wait-time": pool.wait_time_total * 1000.0,
            "bufferpool-wait-ratio": pool.wait_time_total / elapsed,
            "compression-rate-avg": self.compression_ratio_total / b,
        }
