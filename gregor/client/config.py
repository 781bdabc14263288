"""Client configuration: Kafka's dotted names, python keyword spellings, defaults, validation.

Every client (producer, consumer, admin) describes its keys as a list of `Option`s and calls
`parse_config`. The result is a plain dict keyed by Kafka's dotted names, so code reads
`cfg["linger.ms"]` exactly as the Kafka documentation spells it.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from .errors import ConfigError
from .security.options import SECURITY_OPTIONS

_MISSING = object()


@dataclass(frozen=True)
class Option:
    """One configuration key. type is int, float, bool, str, list (comma separated string or a
    list) or object (anything, e.g. a callable)."""

    name: str
    default: Any
    type: type | None = str
    doc: str = ""
    choices: tuple | None = None
    min: float | None = None
    validate: Callable[[Any], Any] | None = None
    secret: bool = False        # a password or key: never shown in errors or reprs


def _to_bool(name: str, v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in ("true", "1", "yes", "on"):
        return True
    if isinstance(v, str) and v.strip().lower() in ("false", "0", "no", "off"):
        return False
    if isinstance(v, int) and v in (0, 1):
        return bool(v)
    raise ConfigError(f"config {name!r}: expected true or false, got {v!r}")


def _convert(opt: Option, v: Any) -> Any:
    name = opt.name
    if v is None:
        return v
    if opt.type is None or opt.type is object:
        return opt.validate(v) if opt.validate is not None else v
    try:
        if opt.type is bool:
            v = _to_bool(name, v)
        elif opt.type is int:
            if isinstance(v, bool):
                raise ValueError
            v = int(v) if not isinstance(v, float) or v.is_integer() else _raise()
        elif opt.type is float:
            v = float(v)
        elif opt.type is list:
            if isinstance(v, str):
                v = [s.strip() for s in v.split(",") if s.strip()]
            else:
                v = list(v)
        elif opt.type is str:
            v = str(v)
    except ConfigError:
        raise
    except (TypeError, ValueError):
        raise ConfigError(f"config {name!r}: expected {opt.type.__name__}, got {v!r}") from None
    if opt.choices is not None:
        key = v.lower() if isinstance(v, str) else v
        if key not in opt.choices:
            raise ConfigError(f"config {name!r}: {v!r} is not one of "
                              f"{', '.join(map(str, opt.choices))}")
        v = key
    if opt.min is not None and v < opt.min:
        raise ConfigError(f"config {name!r}: {v!r} is below the minimum {opt.min}")
    if opt.validate is not None:
        v = opt.validate(v)
    return v


def _raise():
    raise ValueError


def canonical_name(key: str) -> str:
    """'linger_ms' -> 'linger.ms'; dotted names pass through."""
    return key.replace("_", ".")


def parse_config(options: Iterable[Option], conf: Mapping | None = None,
                 kwargs: Mapping | None = None, *, what: str = "client",
                 ignore_unknown: bool = False) -> dict:
    """Merge a config dict and keyword arguments into {dotted name: value} with defaults.

    Both spellings are accepted ('linger.ms' and 'linger_ms'); giving the same key twice with
    different values is an error naming both spellings.
    """
    opts = {o.name: o for o in options}
    raw: dict[str, tuple[str, Any]] = {}
    for source in (conf or {}), (kwargs or {}):
        for key, value in source.items():
            name = key if key in opts else canonical_name(key)
            if name not in opts:
                # Kafka names keep a few underscores nowhere; also try a literal match first.
                if ignore_unknown:
                    continue
                close = difflib.get_close_matches(name, list(opts), n=3)
                hint = f"; did you mean {', '.join(close)}?" if close else ""
                raise ConfigError(f"unknown {what} config key {key!r}{hint}")
            if name in raw and raw[name][1] != value:
                shown = "" if opts[name].secret else \
                    f" ({raw[name][1]!r} vs {value!r})"
                raise ConfigError(f"{what} config {raw[name][0]!r} and {key!r} name the same "
                                  f"setting with different values{shown}; give it once")
            raw[name] = (key, value)
    out = {}
    for name, opt in opts.items():
        if name in raw:
            out[name] = _convert(opt, raw[name][1])
        else:
            out[name] = opt.default
    out["_explicit"] = frozenset(raw)
    return out


def bootstrap_list(cfg: Mapping) -> list[tuple[str, int]]:
    """[(host, port)] from bootstrap.servers ('h1:9092,h2:9093' or a list)."""
    servers = cfg.get("bootstrap.servers")
    if isinstance(servers, str):
        servers = [s for s in servers.split(",")]
    out = []
    for s in servers or []:
        s = s.strip()
        if not s:
            continue
        if "://" in s:
            s = s.split("://", 1)[1]
        host, sep, port = s.rpartition(":")
        if not sep:
            host, port = s, "9092"
        host = host.strip("[]") or "localhost"
        try:
            out.append((host, int(port)))
        except ValueError:
            raise ConfigError(f"config 'bootstrap.servers': bad port in {s!r} "
                              "(expected host:port)") from None
    if not out:
        raise ConfigError("config 'bootstrap.servers' is required: give host:port of at least "
                          "one broker, e.g. bootstrap.servers='127.0.0.1:9092'")
    return out


def _positive(name):
    def check(v):
        if v <= 0:
            raise ConfigError(f"config {name!r} must be positive, got {v}")
        return v
    return check


# Keys every client shares. Defaults are Kafka's (Java client) unless noted.
COMMON_OPTIONS: list[Option] = [
    Option("bootstrap.servers", None, list, "host:port list of brokers to start from"),
    Option("client.id", "gregor", str),
    Option("request.timeout.ms", 30000, int, min=1),
    Option("reconnect.backoff.ms", 50, int, min=0),
    Option("reconnect.backoff.max.ms", 1000, int, min=0),
    Option("retry.backoff.ms", 100, int, min=0),
    Option("retry.backoff.max.ms", 1000, int, min=0),
    Option("metadata.max.age.ms", 300000, int, min=0),
    Option("max.in.flight.requests.per.connection", 5, int, validate=_positive(
        "max.in.flight.requests.per.connection")),
    Option("socket.connection.setup.timeout.ms", 10000, int, min=1),
    # gregor's: a client that never reached any bootstrap server after this long fails with
    # "could not connect to HOST:PORT (connection refused)" instead of waiting out
    # max.block.ms / request.timeout.ms, as kcat does; once connected, Kafka's retries rule.
    # -1 waits as Kafka's clients do.
    Option("gregor.bootstrap.timeout.ms", 5000, int, min=-1),
    Option("connections.max.idle.ms", 540000, int, min=-1),
    # Largest response frame we accept: a hostile or confused peer must not make us allocate
    # more. 100 MiB covers fetch.max.bytes (50 MiB default) with headroom, as librdkafka does.
    Option("receive.message.max.bytes", 100 * 1024 * 1024, int, min=1024),
    # -1: the kernel's default, which autotunes (as librdkafka leaves it). Kafka's Java
    # defaults (128 KiB / 64 KiB) fix the size and turn autotuning off, which only costs a
    # Python client extra wakeups per megabyte moved.
    Option("socket.send.buffer.bytes", -1, int),
    Option("socket.receive.buffer.bytes", -1, int),
    Option("security.protocol", "PLAINTEXT", str,
           choices=("plaintext", "ssl", "sasl_plaintext", "sasl_ssl"), validate=str.upper),
]
# TLS and SASL keys (librdkafka's and Java's names): gregor/client/security/options.py
COMMON_OPTIONS += [Option(**spec) for spec in SECURITY_OPTIONS]


def check_common(cfg: Mapping) -> None:
    """Cross-key checks shared by all clients."""
    if cfg["reconnect.backoff.max.ms"] < cfg["reconnect.backoff.ms"]:
        cfg["reconnect.backoff.max.ms"] = cfg["reconnect.backoff.ms"]
    if cfg["retry.backoff.max.ms"] < cfg["retry.backoff.ms"]:
        cfg["retry.backoff.max.ms"] = cfg["retry.backoff.ms"]
