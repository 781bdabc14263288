"""controller_mutation_rate for one CreateTopics, CreatePartitions or DeleteTopics request
(KIP-599, Kafka's ControllerMutationQuota).

Each topic's partitions created or deleted are recorded as they are about to be applied. New
request versions (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+) get the strict
quota: once the client's token bucket is empty, the remaining topics of the request fail
with THROTTLING_QUOTA_EXCEEDED (the others are done). Older versions get the permissive one:
everything is done and the client is only throttled. Either way the response's
throttle_time_ms says how long until the bucket is no longer in debt, and the enforcer mutes
the connection that long.
"""
from __future__ import annotations

import time

from ...protocol.errors import ThrottlingQuotaExceededError


class MutationQuota:
    __slots__ = ("manager", "budget", "strict", "throttle", "recorded_ms")

    def __init__(self, service=None, ctx=None):
        self.manager = service.mutations if service is not None else None
        self.budget, self.strict = (service.mutation_budget(ctx) if service is not None
                                    else (None, False))
        self.throttle = 0
        self.recorded_ms = 0

    def record(self, permits: float) -> None:
        """Count `permits` partition mutations; ThrottlingQuotaExceededError when strict and
        the bucket is empty (nothing is recorded then)."""
        if self.budget is None or permits <= 0:
            return
        now_ms = int(time.monotonic() * 1000)
        ms = self.manager.try_record(self.budget, permits, now_ms, self.strict)
        if ms:
            self.throttle, self.recorded_ms = ms, now_ms
            if self.strict:
                raise ThrottlingQuotaExceededError(
                    "The throttling quota has been exceeded: this client may create or delete "
                    f"at most {self.budget.limit:g} partitions per second (its "
                    f"controller_mutation_rate); retry after {ms} ms")

    def throttle_time_ms(self) -> int:
        """The throttle time still to come (it shrinks while a request waits, as Kafka's
        AbstractControllerMutationQuota.throttleTime)."""
        if not self.throttle:
            return 0
        elapsed = int(time.monotonic() * 1000) - self.recorded_ms
        return max(0, self.throttle - elapsed)


def mutation_quota(broker, ctx) -> MutationQuota:
    """The quota of this request (an unbounded one when no controller_mutation_rate applies,
    or on a broker that is not the controller: it only answers NOT_CONTROLLER)."""
    service = broker.quotas
    if service is None or not service.mutations.enabled or ctx is None:
        return MutationQuota()
    if broker.cluster is not None and not broker.cluster.controller.active:
        return MutationQuota()
    return MutationQuota(service, ctx)
