"""The console's settings: what `gregor console` was started with, and the limits that keep
one operator's request from hurting the broker or the console."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ConsoleSettings:
    bootstrap: str = "localhost:9092"
    read_only: bool = False
    token: str | None = None
    metrics_url: str | None = None         # sizes when DescribeLogDirs is not available
    client_config: dict = field(default_factory=dict)   # extra client settings (TLS, SASL...)
    # The Schema Registry (Schemas page, values decoded); None: no registry pages or decoding.
    schema_registry_url: str | None = None
    registry_config: dict = field(default_factory=dict)  # basic.auth.user.info, ssl.*...
    # Seconds any one admin call may take; short, so a broker that went away shows a banner
    # quickly instead of a page that hangs.
    request_timeout_s: float = 8.0
    # Blocking client calls run on this many threads (each with its own admin client); more
    # would only queue on the broker and the GIL.
    worker_threads: int = 4
    # Lag sampling: every few seconds, history kept for an hour (720 samples per group).
    lag_interval_s: float = 5.0
    lag_history: int = 720
    # Message search: records scanned per search and seconds per search, by default and at
    # most; two searches at a time (each holds a thread and a consumer).
    search_scan_default: int = 100_000
    search_scan_max: int = 10_000_000
    search_budget_default_s: float = 10.0
    search_budget_max_s: float = 120.0
    max_searches: int = 2
    max_tails: int = 8
    # Records shown per page at most, and characters of a key or value shown in a list
    # before it is cut (the record page shows all of it).
    browse_max: int = 500
    list_value_chars: int = 240

    def registry(self) -> dict:
        """The registry client's config: one quick try per call, so a registry that went away
        makes a page show a note rather than hang; the latest versions are never cached
        (the Schemas page shows what is registered now)."""
        return {"url": self.schema_registry_url, "timeout": self.request_timeout_s,
                "max.retries": 0, "cache.latest.ttl.sec": 0, **self.registry_config}

    def client(self, **extra) -> dict:
        cfg = {"bootstrap.servers": self.bootstrap, "client.id": "gregor-console"}
        cfg.update(self.client_config)
        cfg.update(extra)
        return cfg
