"""The settings one share group runs with: its group configs (Kafka 4.2's names, set with
IncrementalAlterConfigs on resource type GROUP) over the broker's `group.share.*` defaults,
each kept inside the broker's bounds as Kafka keeps them.

Group configs are read from the broker's group config store (gregor/broker/group_configs.py,
fed by IncrementalAlterConfigs) when it is there; without it every group runs with the
broker's values.
"""
from __future__ import annotations

import re

# group config -> (broker default, broker min, broker max)
_BOUNDED = {
    "share.heartbeat.interval.ms": ("group.share.heartbeat.interval.ms",
                                    "group.share.min.heartbeat.interval.ms",
                                    "group.share.max.heartbeat.interval.ms"),
    "share.session.timeout.ms": ("group.share.session.timeout.ms",
                                 "group.share.min.session.timeout.ms",
                                 "group.share.max.session.timeout.ms"),
    "share.record.lock.duration.ms": ("group.share.record.lock.duration.ms",
                                      "group.share.min.record.lock.duration.ms",
                                      "group.share.max.record.lock.duration.ms"),
}
GROUP_CONFIGS = tuple(_BOUNDED) + ("share.auto.offset.reset", "share.isolation.level")
AUTO_OFFSET_RESETS = ("latest", "earliest")
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")

_DURATION = re.compile(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$",
                       re.IGNORECASE)


class InvalidGroupConfig(ValueError):
    pass


def parse_duration_ms(text: str) -> int:
    """ISO-8601 duration (PnDTnHnMn.nS, as java.time.Duration.parse reads it) in ms."""
    m = _DURATION.match(text.strip())
    if not m or text.strip().upper() in ("P", "PT"):
        raise InvalidGroupConfig(f"{text!r} is not a duration such as P1DT2H or PT30M")
    d, h, mi, s = m.groups()
    return int(((int(d or 0) * 24 + int(h or 0)) * 60 + int(mi or 0)) * 60000
               + float(s or 0) * 1000)


def check_auto_offset_reset(value: str) -> str:
    v = value.strip().lower()
    if v in AUTO_OFFSET_RESETS:
        return v
    if v.startswith("by_duration:"):
        parse_duration_ms(value.split(":", 1)[1])
        return "by_duration:" + value.split(":", 1)[1].strip()
    raise InvalidGroupConfig(f"share.auto.offset.reset must be latest, earliest or "
                             f"by_duration:<ISO-8601 duration>, not {value!r}")


def _group_configs(broker, group_id: str) -> dict:
    """The group's own configs from the broker's group config store (group_configs.py), when
    this broker has one; values are checked again below, so a bad one falls back safely."""
    try:
        from ..group_configs import own_group_configs
    except ImportError:
        return {}
    try:
        return dict(own_group_configs(broker, group_id))
    except Exception:
        return {}


def group_settings(broker, group_id: str) -> dict:
    """{heartbeat_interval_ms, session_timeout_ms, record_lock_duration_ms,
    auto_offset_reset, isolation_level} for the group."""
    cfg = broker.config
    own = _group_configs(broker, group_id)
    out = {}
    for name, (dflt, lo, hi) in _BOUNDED.items():
        value = int(cfg.get(dflt))
        if own.get(name) is not None:
            try:
                value = int(own[name])
            except (TypeError, ValueError):
                pass
        value = max(int(cfg.get(lo)), min(int(cfg.get(hi)), value))
        out[name[len("share."):].replace(".", "_")] = value
    reset = own.get("share.auto.offset.reset") or "latest"
    try:
        out["auto_offset_reset"] = check_auto_offset_reset(str(reset))
    except InvalidGroupConfig:
        out["auto_offset_reset"] = "latest"
    level = str(own.get("share.isolation.level") or "read_uncommitted").lower()
    out["isolation_level"] = level if level in ISOLATION_LEVELS else "read_uncommitted"
    return out
