"""connection_creation_rate: new connections per second from one IP (KIP-612), sans-I/O.

An IP's quota is its own ips/<ip> entity, else ips/<default>. A connection over the quota is
not served: as Kafka's acceptor does, the broker holds it without reading, and closes it once
the throttle time (bounded by one quota window) has passed; it is not counted against the
rate. Kafka measures with the same windowed Rate as the other quotas.
"""
from __future__ import annotations

import ipaddress

from ..entity_configs.names import DEFAULT
from .sensor import Rate, throttle_time_ms


def normalized_ip(text: str) -> str:
    """'::ffff:127.0.0.1' and '127.0.0.1' name the same client; IPv6 in its short form."""
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        return text
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return str(addr)


class ConnectionRateQuotas:
    def __init__(self, num: int, window_s: int):
        self.num = max(1, int(num))
        self.window_ms = max(1, int(window_s)) * 1000
        self.max_throttle_ms = self.window_ms
        self.limits: dict[str, float] = {}        # normalized ip or DEFAULT -> connections/s
        self.rates: dict[str, Rate] = {}
        self.throttled: dict[str, int] = {}       # ip -> connections refused (metrics)
        self.enabled = False

    def update(self, ip: str, value: float | None) -> None:
        """ip: an IP address or DEFAULT."""
        key = ip if ip == DEFAULT else normalized_ip(ip)
        if value is None:
            self.limits.pop(key, None)
        else:
            self.limits[key] = value
        self.enabled = bool(self.limits)

    def limit(self, ip: str) -> float | None:
        value = self.limits.get(ip)
        return value if value is not None else self.limits.get(DEFAULT)

    def record(self, client_host: str, now_ms: int) -> int:
        """Count a new connection from client_host; the time to hold it before closing it
        when the IP is over its quota (then it is not counted), else 0."""
        ip = normalized_ip(client_host)
        limit = self.limit(ip)
        if limit is None:
            return 0
        rate = self.rates.get(ip)
        if rate is None:
            rate = self.rates[ip] = Rate(self.num, self.window_ms)
        rate.record(1.0, now_ms)
        ms = throttle_time_ms(rate, limit, now_ms)
        if ms:
            rate.record(-1.0, now_ms)       # refused: not a connection made
            self.throttled[ip] = self.throttled.get(ip, 0) + 1
            return min(ms, self.max_throttle_ms)
        return 0
