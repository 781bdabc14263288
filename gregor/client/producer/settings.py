"""Producer configuration: Java's names and defaults, plus the cross-key checks Kafka makes."""
from __future__ import annotations

from ..config import COMMON_OPTIONS, ConfigError, Option, check_common, parse_config

# Codec ids of the batch attributes field (the same numbers in every Kafka client).
_CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
_ACKS = {"all": -1, "-1": -1, "0": 0, "1": 1}


def _acks(v):
    key = str(v).strip().lower()
    if key not in _ACKS:
        raise ConfigError(f"config 'acks': {v!r} is not one of all, -1, 0, 1")
    return _ACKS[key]


PRODUCER_OPTIONS: list[Option] = COMMON_OPTIONS + [
    Option("acks", -1, object, validate=_acks),
    Option("enable.idempotence", True, bool),
    Option("linger.ms", 5, float, min=0),
    Option("batch.size", 16384, int, min=0),
    # librdkafka's name: at most this many records in one batch. Default None, no count limit:
    # Java's producer bounds batches by batch.size bytes only, and so do we unless asked
    # (librdkafka's own default is 10000).
    Option("batch.num.messages", None, int, min=1),
    Option("buffer.memory", 32 * 1024 * 1024, int, min=1),
    Option("max.block.ms", 60000, int, min=0),
    Option("max.request.size", 1024 * 1024, int, min=1),
    Option("compression.type", "none", str,
           choices=("none", "gzip", "snappy", "lz4", "zstd")),
    Option("retries", 2147483647, int, min=0),
    Option("delivery.timeout.ms", 120000, int, min=1),
    Option("partitioner", None, str),
    Option("partitioner.class", None, object),
    Option("partitioner.ignore.keys", False, bool),
    Option("partitioner.adaptive.partitioning.enable", True, bool),
    Option("partitioner.availability.timeout.ms", 0, int, min=0),
    Option("sticky.partitioning.linger.ms", None, float),
    Option("interceptor.classes", (), object),
    Option("key.serializer", None, object),
    Option("value.serializer", None, object),
    Option("transactional.id", None, str),
    Option("transaction.timeout.ms", 60000, int, min=1),
    Option("metadata.max.idle.ms", 300000, int, min=5000),
]


def producer_config(conf=None, kwargs=None) -> dict:
    """Parse and cross-check a producer config; errors name the keys involved."""
    cfg = parse_config(PRODUCER_OPTIONS, conf, kwargs, what="producer")
    check_common(cfg)
    explicit = cfg["_explicit"]
    if cfg["transactional.id"] is not None:
        if not cfg["enable.idempotence"] and "enable.idempotence" in explicit:
            raise ConfigError("config 'transactional.id' needs enable.idempotence=true "
                              "(transactions are built on idempotence); remove "
                              "'enable.idempotence'=false")
        if not cfg["transactional.id"]:
            raise ConfigError("config 'transactional.id' must not be empty")
    cfg["compression.codec"] = _CODECS[cfg["compression.type"]]
    # Idempotence needs acks=all, retries > 0 and at most 5 requests in flight. When the user
    # asked for idempotence explicitly, a conflict is an error; otherwise (Kafka 3.2+) it is
    # quietly turned off.
    conflicts = []
    if cfg["acks"] != -1:
        conflicts.append(("acks", "all"))
    if cfg["retries"] == 0:
        conflicts.append(("retries", "> 0"))
    if cfg["max.in.flight.requests.per.connection"] > 5:
        conflicts.append(("max.in.flight.requests.per.connection", "<= 5"))
    if cfg["transactional.id"] is not None and conflicts:
        needs = ", ".join(f"{k} {want}" for k, want in conflicts)
        raise ConfigError(f"config 'transactional.id' needs idempotence, which needs {needs}; "
                          f"change {', '.join(repr(k) for k, _ in conflicts)}")
    if cfg["enable.idempotence"] and conflicts:
        if "enable.idempotence" in explicit:
            needs = ", ".join(f"{k} {want}" for k, want in conflicts)
            raise ConfigError(f"config 'enable.idempotence'=true needs {needs}; change "
                              f"{', '.join(repr(k) for k, _ in conflicts)} or set "
                              "enable.idempotence=false")
        cfg["enable.idempotence"] = False
    floor = cfg["linger.ms"] + cfg["request.timeout.ms"]
    if cfg["delivery.timeout.ms"] < floor:
        if "delivery.timeout.ms" in explicit:
            raise ConfigError(
                f"config 'delivery.timeout.ms' ({cfg['delivery.timeout.ms']}) must be at least "
                f"'linger.ms' + 'request.timeout.ms' ({floor:g}); raise delivery.timeout.ms or "
                "lower the other two")
        cfg["delivery.timeout.ms"] = int(floor)
    if cfg["max.request.size"] > cfg["buffer.memory"] and "max.request.size" in explicit \
            and "buffer.memory" in explicit:
        raise ConfigError("config 'max.request.size' is larger than 'buffer.memory': no "
                          "record that large could ever be buffered; lower max.request.size")
    if cfg["sticky.partitioning.linger.ms"] is None:
        cfg["sticky.partitioning.linger.ms"] = 2 * cfg["linger.ms"]
    ic = cfg["interceptor.classes"]
    cfg["interceptor.classes"] = [ic] if ic and not isinstance(ic, (list, tuple)) else list(ic)
    return cfg
