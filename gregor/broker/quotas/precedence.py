"""Which quota applies to a (user, client id), as Kafka's default quota callback decides.

One `QuotaTable` per quota key holds the configured values by entity. For a request of user u
(sanitized principal name) with client id c, the most specific configured entity wins, in the
order of Kafka's docs (design.html "Quotas") and ClientQuotaManager:

    1. users/<u>/clients/<c>        5. users/<default>/clients/<default>
    2. users/<u>/clients/<default>  6. users/<default>
    3. users/<u>                    7. clients/<c>
    4. users/<default>/clients/<c>  8. clients/<default>

A quota is shared by everything that resolves to the same "metric tags" (user tag, client
tag): a quota on users/alice is one budget for all of alice's client ids, a quota on
clients/<default> one budget per client id. When only one level of entities has quotas the
tags are that level's (as Kafka's QuotaTypes shortcut); with several, they follow the entity
that applies. The tags also name the entity in the broker's metrics.
"""
from __future__ import annotations

from ..entity_configs.names import DEFAULT

# Entity levels configured (Kafka's QuotaTypes bits).
CLIENT_LEVEL, USER_LEVEL, USER_CLIENT_LEVEL = 1, 2, 4

Tags = tuple[str, str]            # (sanitized user or "", client id or "")


class QuotaTable:
    __slots__ = ("overrides", "levels")

    def __init__(self):
        # (user key, client key) -> value; a key is None when the entity has no such part,
        # DEFAULT for <default>, else the sanitized user / the plain client id
        self.overrides: dict[tuple[str | None, str | None], float] = {}
        self.levels = 0

    def set(self, user: str | None, client: str | None, value: float | None) -> None:
        key = (user, client)
        if value is None:
            self.overrides.pop(key, None)
        else:
            self.overrides[key] = value
        self._recount()

    def _recount(self) -> None:
        levels = 0
        for user, client in self.overrides:
            if user is not None and client is not None:
                levels |= USER_CLIENT_LEVEL
            elif user is not None:
                levels |= USER_LEVEL
            else:
                levels |= CLIENT_LEVEL
        self.levels = levels

    def __bool__(self) -> bool:
        return bool(self.overrides)

    def tags(self, user: str, client: str) -> Tags:
        """The metric tags (which budget) of a request from sanitized user `user` with
        client id `client`."""
        levels, has = self.levels, self.overrides.__contains__
        if levels in (0, CLIENT_LEVEL):
            return "", client
        if levels == USER_LEVEL:
            return user, ""
        if levels == USER_CLIENT_LEVEL:
            return user, client
        if has((user, client)) or has((user, DEFAULT)):
            return user, client
        if has((user, None)):
            return user, ""
        if has((DEFAULT, client)) or has((DEFAULT, DEFAULT)):
            return user, client
        if has((DEFAULT, None)):
            return user, ""
        return "", client

    def limit(self, tags: Tags) -> float | None:
        """The quota of a budget (None: unlimited), by the precedence order above."""
        user, client = tags
        get = self.overrides.get
        value = None
        if user and client:
            value = get((user, client))
            if value is None:
                value = get((user, DEFAULT))
            if value is None:
                value = get((DEFAULT, client))
            if value is None:
                value = get((DEFAULT, DEFAULT))
        elif user:
            value = get((user, None))
            if value is None:
                value = get((DEFAULT, None))
        elif client:
            value = get((None, client))
            if value is None:
                value = get((None, DEFAULT))
        return value
