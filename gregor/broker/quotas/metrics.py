"""Prometheus metrics of the quotas, per budget (quota type, user, client id) and per IP.

Built when scraped from the managers' budgets (the HTTP thread reads a snapshot; rates are
peeked without touching the samples the event loop records into):

    gregor_quota_rate{quota,user,client_id}                 bytes/s, % or mutations/s now
    gregor_quota_limit{quota,user,client_id}                the quota in force
    gregor_quota_throttle_time_ms_total{quota,user,client_id}
    gregor_quota_throttled_responses_total{quota,user,client_id}
    gregor_quota_connections_refused_total{ip}              over connection_creation_rate

Kafka's names for the same are byte-rate / request-time / mutation-rate and throttle-time in
the Produce, Fetch, Request and ControllerMutation groups, tagged user and client-id.
"""
from __future__ import annotations

import time

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

_LABELS = ["quota", "user", "client_id"]


class QuotaCollector:
    def __init__(self, service):
        self.service = service

    def collect(self):
        now_ms = int(time.monotonic() * 1000)
        rate = GaugeMetricFamily("gregor_quota_rate", "Measured rate of a quota budget "
                                 "(bytes/s, request-time %, or partition mutations/s)",
                                 labels=_LABELS)
        limit = GaugeMetricFamily("gregor_quota_limit", "Quota in force for a budget",
                                  labels=_LABELS)
        ttime = CounterMetricFamily("gregor_quota_throttle_time_ms", "Throttle time given to "
                                    "clients of a budget", labels=_LABELS)
        tcount = CounterMetricFamily("gregor_quota_throttled_responses", "Responses that "
                                     "throttled clients of a budget", labels=_LABELS)
        for manager in self.service.managers():
            for tags, budget in list(manager.budgets.items()):
                labels = [manager.quota_type, tags[0], tags[1]]
                rate.add_metric(labels, budget.rate.peek(now_ms))
                if budget.limit is not None:
                    limit.add_metric(labels, budget.limit)
                ttime.add_metric(labels, budget.throttle_ms_total)
                tcount.add_metric(labels, budget.throttled)
        refused = CounterMetricFamily("gregor_quota_connections_refused", "Connections closed "
                                      "unserved for exceeding connection_creation_rate",
                                      labels=["ip"])
        for ip, n in list(self.service.connections.throttled.items()):
            refused.add_metric([ip], n)
        yield rate
        yield limit
        yield ttime
        yield tcount
        yield refused
