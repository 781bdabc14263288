"""Prometheus metrics of one broker: bytes in/out, requests, errors and latency per API,
connections, purgatory sizes, partition log sizes and offsets.

Each broker has its own CollectorRegistry (so tests can run several brokers in one process);
`serve(port)` exposes it over HTTP on 127.0.0.1 for `--metrics-port`. The per-request
counters and latency histograms are plain ints and lists updated on the event loop (no locks:
prometheus-client's own metric objects cost ~1 us per update with their locks, several times
per request); a collector turns them into metric families when scraped.
"""
from __future__ import annotations

import logging
from typing import Callable, Iterable

from bisect import bisect_left

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server
from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                    HistogramMetricFamily)

from ..protocol import messages

log = logging.getLogger("gregor.broker.metrics")

# Request latencies are sub-millisecond when things go well and up to the request timeout when
# they wait in the purgatory; the buckets cover 50 us to 30 s.
_LATENCY_BUCKETS = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def _api_name(key: int) -> str:
    api = messages.APIS.get(key)
    return api.name if api is not None else str(key)


class BrokerMetrics:
    def __init__(self):
        self.registry = r = CollectorRegistry(auto_describe=True)
        self._errors = Counter("gregor_broker_errors",
                               "Errors returned (per partition or request) or connections "
                               "closed on bad requests", ["api", "error"], registry=r)
        self._connections = Gauge("gregor_broker_connections", "Open client connections",
                                  registry=r)
        self.bytes_received = 0
        self.bytes_sent = 0
        self.records_appended = 0
        self.requests: dict[int, int] = {}
        # api key -> [bucket counts (len(buckets) + 1 for +Inf), sum of seconds]
        self.latencies: dict[int, list] = {}
        r.register(_RequestCollector(self))
        self._http = None

    # -- hot path ------------------------------------------------------------------------

    def bytes_in(self, n: int) -> None:
        self.bytes_received += n

    def bytes_out(self, n: int) -> None:
        self.bytes_sent += n

    def request(self, api_key: int) -> None:
        self.requests[api_key] = self.requests.get(api_key, 0) + 1

    def latency(self, api_key: int, seconds: float) -> None:
        h = self.latencies.get(api_key)
        if h is None:
            h = self.latencies[api_key] = [[0] * (len(_LATENCY_BUCKETS) + 1), 0.0]
        h[0][bisect_left(_LATENCY_BUCKETS, seconds)] += 1
        h[1] += seconds

    def error(self, api_key: int, error_name: str = "CONNECTION_CLOSED") -> None:
        self._errors.labels(_api_name(api_key), error_name).inc()

    def records_in(self, n: int) -> None:
        self.records_appended += n

    def connection_opened(self) -> None:
        self._connections.inc()

    def connection_closed(self) -> None:
        self._connections.dec()

    # -- sampled state -------------------------------------------------------------------

    def watch_purgatories(self, purgatories: Callable[[], Iterable]) -> None:
        """Report each purgatory's number of waiting operations when scraped."""
        self.registry.register(_PurgatoryCollector(purgatories))

    def watch_partitions(self, partitions: Callable[[], Iterable]) -> None:
        """Report log size, start offset, end offset and high watermark per partition."""
        self.registry.register(_PartitionCollector(partitions))

    def serve(self, port: int, host: str = "127.0.0.1") -> int:
        server, _thread = start_http_server(port, addr=host, registry=self.registry)
        self._http = server
        return server.server_address[1]

    def close(self) -> None:
        if self._http is not None:
            self._http.shutdown()
            self._http = None


class _RequestCollector:
    """The hot-path counters as Prometheus metric families, built when scraped."""

    def __init__(self, m: BrokerMetrics):
        self.m = m

    def collect(self):
        m = self.m
        yield CounterMetricFamily("gregor_broker_bytes_in", "Bytes received from clients",
                                  value=m.bytes_received)
        yield CounterMetricFamily("gregor_broker_bytes_out", "Bytes sent to clients",
                                  value=m.bytes_sent)
        yield CounterMetricFamily("gregor_broker_messages_in", "Records appended",
                                  value=m.records_appended)
        req = CounterMetricFamily("gregor_broker_requests", "Requests received", labels=["api"])
        for key, n in sorted(dict(m.requests).items()):
            req.add_metric([_api_name(key)], n)
        yield req
        lat = HistogramMetricFamily("gregor_broker_request_latency_seconds",
                                    "Time from receiving a request to writing its response",
                                    labels=["api"])
        for key, (counts, total) in sorted(dict(m.latencies).items()):
            buckets, acc = [], 0
            for bound, c in zip(list(_LATENCY_BUCKETS) + [float("inf")], list(counts)):
                acc += c
                buckets.append(("+Inf" if bound == float("inf") else repr(bound), acc))
            lat.add_metric([_api_name(key)], buckets, total)
        yield lat


class _PurgatoryCollector:
    def __init__(self, purgatories):
        self.purgatories = purgatories

    def collect(self):
        g = GaugeMetricFamily("gregor_broker_purgatory_size",
                              "Delayed operations waiting in a purgatory", labels=["purgatory"])
        for p in list(self.purgatories()):
            g.add_metric([p.name], p.delayed())
        yield g


class _PartitionCollector:
    def __init__(self, partitions):
        self.partitions = partitions

    def collect(self):
        size = GaugeMetricFamily("gregor_partition_log_size_bytes", "Bytes in the partition's log",
                                 labels=["topic", "partition"])
        start = GaugeMetricFamily("gregor_partition_log_start_offset", "Log start offset",
                                  labels=["topic", "partition"])
        end = GaugeMetricFamily("gregor_partition_log_end_offset", "Log end offset",
                                labels=["topic", "partition"])
        hw = GaugeMetricFamily("gregor_partition_high_watermark", "High watermark",
                               labels=["topic", "partition"])
        # Scrapes run on the HTTP thread; take a snapshot and tolerate partitions that are
        # deleted while we look at them.
        for p in list(self.partitions()):
            labels = [p.topic, str(p.index)]
            try:
                size.add_metric(labels, p.log.size_bytes)
                start.add_metric(labels, p.log.log_start_offset)
                end.add_metric(labels, p.log.log_end_offset)
                hw.add_metric(labels, p.high_watermark)
            except Exception:
                continue
        yield size
        yield start
        yield end
        yield hw
