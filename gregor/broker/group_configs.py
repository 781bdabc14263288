"""Group configs (config resource type GROUP, 32): Kafka 4.2's per-group settings, their broker
defaults and bounds, their validation, and the one function the group coordinators read them by.

    group_config(broker, group_id) -> dict[str, int | str]
        The settings in force for the group: every name of GROUP_CONFIGS, typed (ints for the
        *.ms settings, str for the others), the group's own value where it has one (set with
        IncrementalAlterConfigs), else the broker's default (e.g. share.session.timeout.ms
        from group.share.session.timeout.ms). No I/O: a dict lookup in the entity config store,
        so a coordinator may call it on every heartbeat. A group need not exist to have
        configs, as in Kafka; configs of a deleted group stay until deleted.
    own_group_configs(broker, group_id) -> dict[str, str]   only what the group set itself
    checked_group_configs(broker_config, configs) -> dict[str, str]
        The complete own configs of a group after a change, validated as Kafka's GroupConfig
        does (names, types, the broker's group.consumer.* / group.share.* min/max bounds,
        heartbeat interval < session timeout); InvalidConfigurationError names the culprit.

Names (Kafka 4.2): consumer.session.timeout.ms, consumer.heartbeat.interval.ms,
share.session.timeout.ms, share.heartbeat.interval.ms, share.record.lock.duration.ms,
share.auto.offset.reset (latest | earliest | by_duration:<ISO-8601 duration>),
share.isolation.level (read_uncommitted | read_committed). Streams groups' streams.* settings
are not served (gregor has no streams groups).

Storage: the entity config store (entity_configs/), path groups/<sanitized group id>: a JSON
file in the data directory on a single node, /config/groups/<g> znodes in a cluster, with the
same change notifications as user and client configs, so every broker sees every change.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..protocol.errors import InvalidConfigurationError
from .entity_configs.names import GROUPS, EntityPath, sanitize


@dataclass(frozen=True)
class GroupSetting:
    name: str
    type: str                       # int | string
    default_from: str | None        # the broker setting that gives the default
    default: str | None             # the default when default_from is None
    min_from: str | None = None     # broker settings bounding the value
    max_from: str | None = None
    doc: str = ""


_S = GroupSetting
GROUP_CONFIGS: dict[str, GroupSetting] = {s.name: s for s in [
    _S("consumer.session.timeout.ms", "int", "group.consumer.session.timeout.ms", None,
       "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms",
       "A consumer-protocol member silent this long is removed from the group."),
    _S("consumer.heartbeat.interval.ms", "int", "group.consumer.heartbeat.interval.ms", None,
       "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms",
       "Heartbeat interval given to the group's consumer-protocol members."),
    _S("share.session.timeout.ms", "int", "group.share.session.timeout.ms", None,
       "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms",
       "A share-group member silent this long is removed from the group."),
    _S("share.heartbeat.interval.ms", "int", "group.share.heartbeat.interval.ms", None,
       "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms",
       "Heartbeat interval given to the share group's members."),
    _S("share.record.lock.duration.ms", "int", "group.share.record.lock.duration.ms", None,
       "group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms",
       "How long a share-group member holds the records it acquired."),
    _S("share.auto.offset.reset", "string", None, "latest", doc=(
        "Where a share group starts on a partition without a start offset: latest, earliest "
        "or by_duration:<ISO-8601 duration> (records newer than now minus the duration).")),
    _S("share.isolation.level", "string", None, "read_uncommitted", doc=(
        "read_uncommitted or read_committed: whether a share group sees records of open and "
        "aborted transactions.")),
]}

_ISOLATION = ("read_uncommitted", "read_committed")
# java.time.Duration.parse's form: PnDTnHnMn.nS (each part optional, a leading sign allowed)
_DURATION = re.compile(r"([-+]?)P(?:([-+]?[0-9]+)D)?(?:T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?"
                       r"(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?", re.IGNORECASE)


def parse_iso_duration_ms(text: str) -> int:
    """'PT1H' -> 3600000, 'P1DT30M' -> 88200000; ValueError if not a Java Duration string."""
    m = _DURATION.fullmatch(text)
    if m is None or text.upper().endswith("T") or not any(m.group(i) for i in (2, 3, 4, 5)):
        raise ValueError(f"{text!r} is not an ISO-8601 duration such as PT1H or P1DT30M")
    sign = -1 if m.group(1) == "-" else 1
    days, hours, minutes, secs = (int(m.group(i) or 0) for i in (2, 3, 4, 5))
    frac = m.group(6) or ""
    ms = ((days * 24 + hours) * 60 + minutes) * 60_000 + secs * 1000
    if frac:
        ms += (-1 if secs < 0 else 1) * int((frac + "000")[:3])
    return sign * ms


def parse_auto_offset_reset(text: str) -> tuple[str, int | None]:
    """('latest', None), ('earliest', None) or ('by_duration', milliseconds)."""
    low = text.strip().lower()
    if low in ("latest", "earliest"):
        return low, None
    if low.startswith("by_duration:"):
        ms = parse_iso_duration_ms(text.strip()[len("by_duration:"):])
        if ms < 0:
            raise ValueError("the duration of by_duration must not be negative")
        return "by_duration", ms
    raise ValueError(f"{text!r}: use latest, earliest or by_duration:<ISO-8601 duration>")


def group_path(group_id: str) -> EntityPath:
    return EntityPath(GROUPS, sanitize(group_id))


def _default(broker_config, s: GroupSetting):
    if s.default_from is None:
        return s.default
    return int(broker_config.get(s.default_from))


def own_group_configs(broker, group_id: str) -> dict[str, str]:
    store = broker.entity_configs
    if store is None:
        return {}
    return {k: v for k, v in store.get(group_path(group_id)).items() if k in GROUP_CONFIGS}


def group_config(broker, group_id: str) -> dict[str, int | str]:
    own = own_group_configs(broker, group_id)
    out: dict[str, int | str] = {}
    for name, s in GROUP_CONFIGS.items():
        raw = own.get(name)
        if raw is None:
            out[name] = _default(broker.config, s)
        else:
            out[name] = int(raw) if s.type == "int" else raw
    return out


def checked_group_configs(broker_config, configs: dict[str, str]) -> dict[str, str]:
    clean: dict[str, str] = {}
    typed: dict[str, int | str] = {}
    for name, raw in configs.items():
        s = GROUP_CONFIGS.get(name)
        if s is None:
            raise InvalidConfigurationError(f"Unknown group config name: {name}")
        text = str(raw).strip()
        if s.type == "int":
            try:
                value = int(text)
            except ValueError:
                raise InvalidConfigurationError(
                    f"Invalid value {raw} for configuration {name}: Not a number of type "
                    "INT") from None
            lo = int(broker_config.get(s.min_from))
            hi = int(broker_config.get(s.max_from))
            if value < lo:
                raise InvalidConfigurationError(
                    f"{name} must be greater than or equal to {s.min_from} ({lo})")
            if value > hi:
                raise InvalidConfigurationError(
                    f"{name} must be less than or equal to {s.max_from} ({hi})")
            typed[name] = value
            clean[name] = str(value)
        else:
            try:
                if name == "share.auto.offset.reset":
                    parse_auto_offset_reset(text)
                elif text not in _ISOLATION:
                    raise ValueError(f"use {' or '.join(_ISOLATION)}")
            except ValueError as e:
                raise InvalidConfigurationError(
                    f"Invalid value {raw} for configuration {name}: {e}") from None
            typed[name] = text
            clean[name] = text
    for kind in ("consumer", "share"):
        hb = typed.get(f"{kind}.heartbeat.interval.ms",
                       _default(broker_config, GROUP_CONFIGS[f"{kind}.heartbeat.interval.ms"]))
        st = typed.get(f"{kind}.session.timeout.ms",
                       _default(broker_config, GROUP_CONFIGS[f"{kind}.session.timeout.ms"]))
        if hb >= st:
            raise InvalidConfigurationError(
                f"{kind}.heartbeat.interval.ms must be less than {kind}.session.timeout.ms")
    return clean
