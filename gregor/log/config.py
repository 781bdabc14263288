"""Per-partition log settings, with Kafka's topic-level names and defaults.

`LogConfig.from_dict` accepts the topic-level names (`segment.bytes`), their snake_case Python
spellings (`segment_bytes`) and the broker-level names (`log.segment.bytes`,
`log.retention.hours`, `log.flush.interval.messages`, ...), so the broker can pass its own
settings and a topic's overrides through the same door.

gregor additions (not Kafka settings):
- `log.flush.policy` / `flush_policy`: "inline" (default, Kafka's behaviour: append() itself
  fsyncs when flush.messages / flush.ms say so) or "group" (group commit: append() never
  fsyncs; it only notes that a flush is due, and the caller calls `Log.sync()` once after a
  whole batch of requests, so that one fsync covers every append since the previous one).
- `producer.reject.unknown.sequence`: when true, a non-zero sequence from a producer id the log
  has no state for fails with UNKNOWN_PRODUCER_ID (Kafka before 2.5). Default false, as in
  current Kafka, which accepts it because the state may have been removed by retention.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Mapping

# Java's Long.MAX_VALUE: Kafka's "never" for flush.messages / flush.ms.
LONG_MAX = (1 << 63) - 1

_DAY_MS = 24 * 60 * 60 * 1000

FLUSH_INLINE = "inline"
FLUSH_GROUP = "group"
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")

# Positions in a segment and in its offset index are stored as uint32, and Kafka itself caps
# segment.bytes at Int.MAX_VALUE; relative offsets are uint32 too (a roll happens before they
# would overflow).
MAX_SEGMENT_BYTES = (1 << 31) - 1
# Below one batch header a segment could not hold anything.
MIN_SEGMENT_BYTES = 61


@dataclass(frozen=True, slots=True)
class LogConfig:
    segment_bytes: int = 1 << 30                 # segment.bytes: 1 GiB
    segment_ms: int = 7 * _DAY_MS                # segment.ms: roll at least weekly
    retention_bytes: int = -1                    # retention.bytes: -1 = no size limit
    retention_ms: int = 7 * _DAY_MS              # retention.ms: -1 = keep forever
    flush_messages: int = LONG_MAX               # flush.messages: leave it to the page cache
    flush_ms: int = LONG_MAX                     # flush.ms: likewise
    index_interval_bytes: int = 4096             # index.interval.bytes
    segment_index_bytes: int = 10 * 1024 * 1024  # segment.index.bytes: roll when index full
    max_message_bytes: int = 1048588            # max.message.bytes (largest batch)
    message_timestamp_type: str = "CreateTime"   # message.timestamp.type
    flush_policy: str = FLUSH_INLINE             # gregor: log.flush.policy (see module doc)
    producer_reject_unknown_sequence: bool = False  # gregor: see module doc
    # producer.id.expiration.ms (broker-level in Kafka): apply_retention forgets producers
    # idle that long (by their last batch's timestamp) unless a transaction is open.
    producer_id_expiration_ms: int = _DAY_MS
    # Kafka flushes a rolled segment off the request path; so do we (a background thread
    # fsyncs it). Tests turn it off to make flush points deterministic.
    flush_rolled_in_background: bool = True
    # Compaction (see gregor/log/cleaner/): cleanup.policy is "delete", "compact" or both.
    cleanup_policy: str = "delete"
    delete_retention_ms: int = _DAY_MS           # delete.retention.ms: tombstones' grace time
    min_cleanable_dirty_ratio: float = 0.5       # min.cleanable.dirty.ratio
    min_compaction_lag_ms: int = 0               # min.compaction.lag.ms
    max_compaction_lag_ms: int = LONG_MAX        # max.compaction.lag.ms

    def __post_init__(self) -> None:
        if not MIN_SEGMENT_BYTES <= self.segment_bytes <= MAX_SEGMENT_BYTES:
            raise ValueError(f"segment.bytes must be in [{MIN_SEGMENT_BYTES}, "
                             f"{MAX_SEGMENT_BYTES}], got {self.segment_bytes}")
        if self.segment_ms < 1:
            raise ValueError(f"segment.ms must be >= 1, got {self.segment_ms}")
        if self.flush_messages < 1 or self.flush_ms < 0:
            raise ValueError("flush.messages must be >= 1 and flush.ms >= 0")
        if self.index_interval_bytes < 0:
            raise ValueError("index.interval.bytes must be >= 0")
        if self.segment_index_bytes < 8:
            raise ValueError("segment.index.bytes must hold at least one 8-byte entry")
        if self.max_message_bytes < 0:
            raise ValueError("max.message.bytes must be >= 0")
        if self.message_timestamp_type not in TIMESTAMP_TYPES:
            raise ValueError(f"message.timestamp.type must be one of {TIMESTAMP_TYPES}, "
                             f"got {self.message_timestamp_type!r}")
        policies = {p.strip() for p in self.cleanup_policy.split(",") if p.strip()}
        if not policies or not policies <= {"delete", "compact"}:
            raise ValueError(f"cleanup.policy must be delete, compact or both, "
                             f"got {self.cleanup_policy!r}")
        if not 0.0 <= self.min_cleanable_dirty_ratio <= 1.0:
            raise ValueError("min.cleanable.dirty.ratio must be in [0, 1]")
        if self.flush_policy not in (FLUSH_INLINE, FLUSH_GROUP):
            raise ValueError(f"log.flush.policy must be 'inline' or 'group', "
                             f"got {self.flush_policy!r}")

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def max_index_entries(self) -> int:
        return self.segment_index_bytes // 8

    @classmethod
    def from_dict(cls, settings: Mapping[str, Any] | None = None, **kwargs: Any) -> "LogConfig":
        """Build from Kafka-named settings (strings are accepted, as in properties files).
        Unknown keys raise ValueError naming them, so typos do not pass silently."""
        merged = dict(settings or {})
        merged.update(kwargs)
        values: dict[str, Any] = {}
        unknown = []
        for key, raw in merged.items():
            if raw is None:          # an unset topic override: keep the default
                continue
            target = _ALIASES.get(key) or _ALIASES.get(key.replace("_", "."))
            if target is None:
                unknown.append(key)
                continue
            attr, scale = target
            values[attr] = _convert(attr, raw, scale)
        if unknown:
            raise ValueError(f"unknown log settings {sorted(unknown)}; known: "
                             f"{sorted(k for k in _ALIASES if '_' not in k)}")
        return cls(**values)

    def with_overrides(self, settings: Mapping[str, Any]) -> "LogConfig":
        """A copy with topic-level overrides applied on top of this config."""
        other = LogConfig.from_dict(settings)
        changed = {f.name: getattr(other, f.name) for f in fields(self)
                   if f.name in _explicit_attrs(settings)}
        return replace(self, **changed)


def _explicit_attrs(settings: Mapping[str, Any]) -> set[str]:
    out = set()
    for key in settings:
        target = _ALIASES.get(key) or _ALIASES.get(key.replace("_", "."))
        if target:
            out.add(target[0])
    return out


_BOOL_ATTRS = {"producer_reject_unknown_sequence", "flush_rolled_in_background"}
_STR_ATTRS = {"message_timestamp_type", "flush_policy", "cleanup_policy"}
_FLOAT_ATTRS = {"min_cleanable_dirty_ratio"}


def _convert(attr: str, raw: Any, scale: int) -> Any:
    if attr in _BOOL_ATTRS:
        if isinstance(raw, str):
            return raw.strip().lower() in ("true", "1", "yes")
        return bool(raw)
    if attr in _STR_ATTRS:
        if isinstance(raw, (list, tuple)):
            return ",".join(str(r).strip() for r in raw)
        return str(raw)
    if attr in _FLOAT_ATTRS:
        return float(raw)
    value = int(raw)
    if value < 0:          # -1 means "unlimited" and must not be scaled
        return value
    return min(value * scale, LONG_MAX)


_HOUR_MS = 60 * 60 * 1000


def _build_aliases() -> dict[str, tuple[str, int]]:
    aliases: dict[str, tuple[str, int]] = {}
    topic_names = {
        "segment.bytes": "segment_bytes", "segment.ms": "segment_ms",
        "retention.bytes": "retention_bytes", "retention.ms": "retention_ms",
        "flush.messages": "flush_messages", "flush.ms": "flush_ms",
        "index.interval.bytes": "index_interval_bytes",
        "segment.index.bytes": "segment_index_bytes",
        "max.message.bytes": "max_message_bytes",
        "message.timestamp.type": "message_timestamp_type",
        "log.flush.policy": "flush_policy", "flush.policy": "flush_policy",
        "producer.reject.unknown.sequence": "producer_reject_unknown_sequence",
        "flush.rolled.in.background": "flush_rolled_in_background",
        "producer.id.expiration.ms": "producer_id_expiration_ms",
        "cleanup.policy": "cleanup_policy", "delete.retention.ms": "delete_retention_ms",
        "min.cleanable.dirty.ratio": "min_cleanable_dirty_ratio",
        "min.compaction.lag.ms": "min_compaction_lag_ms",
        "max.compaction.lag.ms": "max_compaction_lag_ms",
    }
    for name, attr in topic_names.items():
        aliases[name] = (attr, 1)
        aliases[attr] = (attr, 1)
    broker_names = {
        "log.segment.bytes": ("segment_bytes", 1),
        "log.roll.ms": ("segment_ms", 1), "log.roll.hours": ("segment_ms", _HOUR_MS),
        "log.retention.bytes": ("retention_bytes", 1),
        "log.retention.ms": ("retention_ms", 1),
        "log.retention.minutes": ("retention_ms", 60 * 1000),
        "log.retention.hours": ("retention_ms", _HOUR_MS),
        "log.flush.interval.messages": ("flush_messages", 1),
        "log.flush.interval.ms": ("flush_ms", 1),
        "log.index.interval.bytes": ("index_interval_bytes", 1),
        "log.index.size.max.bytes": ("segment_index_bytes", 1),
        "message.max.bytes": ("max_message_bytes", 1),
        "log.message.timestamp.type": ("message_timestamp_type", 1),
        "log.cleanup.policy": ("cleanup_policy", 1),
        "log.cleaner.delete.retention.ms": ("delete_retention_ms", 1),
        "log.cleaner.min.cleanable.ratio": ("min_cleanable_dirty_ratio", 1),
        "log.cleaner.min.compaction.lag.ms": ("min_compaction_lag_ms", 1),
        "log.cleaner.max.compaction.lag.ms": ("max_compaction_lag_ms", 1),
    }
    aliases.update(broker_names)
    return aliases


_ALIASES = _build_aliases()
