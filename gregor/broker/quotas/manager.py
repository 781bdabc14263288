"""One manager per quota type: the budgets (sensors) of the users and client ids it sees.

`ClientQuotaManager` is Kafka's: produce and fetch byte rates, and (with a bounded throttle)
the request-time percentage. `ControllerMutationQuotaManager` keeps a token bucket per budget
for partition creations and deletions (KIP-599). Sans-I/O: callers pass the time.

A request's budget comes from its principal name and client id through the QuotaTable
(precedence.py); the lookup is cached per (principal, client id) until the quotas change, so a
request costs two dict lookups and a record into its Rate. A client no quota applies to is not
measured at all. Budgets idle for an hour are dropped, as Kafka drops inactive sensors.
"""
from __future__ import annotations

from ..entity_configs.names import sanitize
from .precedence import QuotaTable, Tags
from .sensor import Rate, TokenBucket, throttle_time_ms

INACTIVE_SENSOR_EXPIRATION_MS = 3600 * 1000


class Budget:
    """The sensor of one (user tag, client tag): its rate or bucket, its quota, and the
    throttle time it caused (for metrics)."""
    __slots__ = ("tags", "limit", "rate", "bucket", "throttle_ms_total", "throttled",
                 "last_ms")

    def __init__(self, tags: Tags, limit: float | None, num: int, window_ms: int,
                 bucket: bool = False):
        self.tags = tags
        self.limit = limit
        self.rate = Rate(num, window_ms)
        self.bucket = TokenBucket(num, window_ms) if bucket else None
        self.throttle_ms_total = 0
        self.throttled = 0
        self.last_ms = 0


class ClientQuotaManager:
    """quota_type: 'produce', 'fetch', 'request' (Kafka's QuotaType names, used in metrics)."""

    def __init__(self, quota_type: str, num: int, window_s: int,
                 max_throttle_ms: int | None = None):
        self.quota_type = quota_type
        self.num = max(1, int(num))
        self.window_ms = max(1, int(window_s)) * 1000
        self.max_throttle_ms = max_throttle_ms      # the request quota bounds it to a window
        self.table = QuotaTable()
        self.enabled = False            # any quota of this type configured (read per request)
        self.budgets: dict[Tags, Budget] = {}
        self._cache: dict[tuple[str, str], Budget | None] = {}

    # -- configuration ----------------------------------------------------------------------

    def update(self, user: str | None, client: str | None, value: float | None) -> None:
        """Set (value) or remove (None) the quota of an entity; user is the stored
        (sanitized) name or <default>, client the plain client id or <default>; None for a
        part the entity does not have."""
        self.table.set(user, client, value)
        self.enabled = bool(self.table)
        self._cache.clear()
        for budget in self.budgets.values():     # existing budgets keep their history
            budget.limit = self.table.limit(budget.tags)

    # -- the request path ------------------------------------------------------------------

    def budget(self, principal_name: str, client_id: str) -> Budget | None:
        """The budget a request counts against; None when no quota applies to it."""
        key = (principal_name, client_id)
        try:
            return self._cache[key]
        except KeyError:
            pass
        table = self.table
        tags = table.tags(sanitize(principal_name), client_id or "")
        limit = table.limit(tags)
        budget = None
        if limit is not None:
            budget = self.budgets.get(tags)
            if budget is None:
                budget = self.budgets[tags] = self._new_budget(tags, limit)
        if len(self._cache) > 100_000:     # many short-lived client ids: start over
            self._cache.clear()
        self._cache[key] = budget
        return budget

    def _new_budget(self, tags: Tags, limit: float) -> Budget:
        return Budget(tags, limit, self.num, self.window_ms)

    def record(self, budget: Budget, value: float, now_ms: int) -> int:
        """Record value; the throttle time in ms when the budget's quota is now exceeded."""
        budget.rate.record(value, now_ms)
        budget.last_ms = now_ms
        ms = throttle_time_ms(budget.rate, budget.limit, now_ms)
        if ms and self.max_throttle_ms is not None:
            ms = min(ms, self.max_throttle_ms)
        return ms

    def throttle_now(self, budget: Budget, now_ms: int) -> int:
        """The throttle time the budget has now, recording nothing (0 within its quota)."""
        ms = throttle_time_ms(budget.rate, budget.limit, now_ms)
        if ms and self.max_throttle_ms is not None:
            ms = min(ms, self.max_throttle_ms)
        return ms

    def unrecord(self, budget: Budget, value: float, now_ms: int) -> None:
        """Take back a recorded value (a throttled fetch answers without its data)."""
        budget.rate.record(-value, now_ms)

    def max_value_in_window(self, budget: Budget | None) -> float:
        """The most that can be recorded at once without certain throttling (the fetch size
        cap of a quota'd consumer): quota x (num - 1) x window."""
        if budget is None:
            return float("inf")
        return budget.limit * (self.num - 1) * (self.window_ms / 1000.0)

    @staticmethod
    def throttled(budget: Budget, ms: int) -> None:
        budget.throttle_ms_total += ms
        budget.throttled += 1

    def expire(self, now_ms: int) -> int:
        """Drop budgets idle for an hour; returns how many."""
        idle = [t for t, b in self.budgets.items()
                if now_ms - b.last_ms >= INACTIVE_SENSOR_EXPIRATION_MS]
        for tags in idle:
            del self.budgets[tags]
        if idle:
            self._cache.clear()
        return len(idle)


class ControllerMutationQuotaManager(ClientQuotaManager):
    """Partition mutations (topics created or deleted, partitions added) per second, as a
    token bucket; `strict` (new request versions) refuses a request once the bucket is empty,
    `permissive` (old versions) accepts it and only throttles."""

    def __init__(self, num: int, window_s: int):
        super().__init__("controller_mutation", num, window_s)

    def _new_budget(self, tags: Tags, limit: float) -> Budget:
        return Budget(tags, limit, self.num, self.window_ms, bucket=True)

    def try_record(self, budget: Budget, permits: float, now_ms: int, strict: bool) -> int:
        """0 when admitted (and recorded); otherwise the throttle time in ms. A strict quota
        records nothing when it refuses; a permissive one always records."""
        bucket = budget.bucket
        budget.last_ms = now_ms
        if strict:
            tokens = bucket.measure(budget.limit, now_ms)
            if tokens < 0:
                return TokenBucket.throttle_ms(tokens, budget.limit)
            bucket.record(budget.limit, permits, now_ms)
            budget.rate.record(permits, now_ms)
            return 0
        bucket.record(budget.limit, permits, now_ms)
        budget.rate.record(permits, now_ms)
        return TokenBucket.throttle_ms(bucket.measure(budget.limit, now_ms), budget.limit)

    def throttle_now(self, budget: Budget, now_ms: int) -> int:
        """The time until the bucket is no longer negative (0 when it is not)."""
        return TokenBucket.throttle_ms(budget.bucket.measure(budget.limit, now_ms),
                                       budget.limit)
