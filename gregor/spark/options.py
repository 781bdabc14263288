"""Options of the gregor Spark data source, parsed and checked once on the driver.

The names, defaults and rules follow Spark's Kafka connector, so that a job switches from
format("kafka") to format("gregor") without touching its options. Everything here is plain
Python (no Spark, no network) so it is tested directly; errors are `OptionError` (a
ValueError) with a message that names the option and says what to write instead.
"""
from __future__ import annotations

import functools
import json
import logging
import re
import uuid
from dataclasses import dataclass, field
from typing import Mapping

from .java_regex import JavaRegexError, compile_java_regex, java_regex_search

log = logging.getLogger("gregor.spark")

EARLIEST = -2  # Kafka's sentinel offsets, as in the connector's JSON offsets
LATEST = -1

# Client options the connector decides itself; accepting them would silently change meaning.
_REJECTED_SOURCE_CLIENT_OPTIONS = {
    "auto.offset.reset": "set the source option 'startingOffsets' to 'earliest' or 'latest' instead",
    "key.deserializer": "keys are always read as bytes; cast the 'key' column in the DataFrame",
    "value.deserializer": "values are always read as bytes; cast the 'value' column in the DataFrame",
    "enable.auto.commit": "the source never commits consumer offsets; progress lives in the checkpoint",
    "interceptor.classes": "interceptors would see raw bytes only; transform the DataFrame instead",
}
_REJECTED_SINK_CLIENT_OPTIONS = {
    "key.serializer": "keys are written as bytes; cast the 'key' column to string or binary",
    "value.serializer": "values are written as bytes; cast the 'value' column to string or binary",
}

# Spark's default for maxTriggerDelay: a source holding back for minOffsetsPerTrigger still
# runs a batch after 15 minutes so slow topics are not starved forever.
DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60 * 1000
# kafkaConsumer.pollTimeoutMs: how long a task waits for records it knows exist before failing;
# the connector's default (Spark's network timeout, 120 s) outlasts a broker restart.
DEFAULT_POLL_TIMEOUT_MS = 120_000
# fetchOffset.numRetries / fetchOffset.retryIntervalMs: attempts of the driver's offset
# queries and the pause after a failed one (KafkaOffsetReaderAdmin's defaults: 3 and 1000 ms;
# the integration guide prints 10 ms, the code uses 1000).
DEFAULT_FETCH_OFFSET_RETRIES = 3
DEFAULT_FETCH_OFFSET_RETRY_INTERVAL_MS = 1000
# Spark's default prefixes of the generated consumer group ids (groupIdPrefix).
BATCH_GROUP_PREFIX = "spark-kafka-relation"
STREAM_GROUP_PREFIX = "spark-kafka-source"
# Spark's warning for kafka.group.id (KafkaSourceProvider.CUSTOM_GROUP_ID_ERROR_MESSAGE),
# reworded.
CUSTOM_GROUP_ID_WARNING = (
    "option 'kafka.group.id' is set: every consumer of this query uses that group id. Kafka's "
    "group-based ACLs are the usual reason; but concurrent queries or sources with the same "
    "group id, or a restarted query and its previous run, then share one consumer group. Give "
    "each query its own group id (or use groupIdPrefix).")
_STREAM_ONLY = ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay")

# Every option the source and the sink read besides kafka.*, spelt as Spark spells them. The
# parity table of docs/spark.md is checked against these (tests/spark/test_spark_parity_table.py).
SOURCE_OPTIONS = (
    "assign", "subscribe", "subscribePattern", "startingOffsets", "endingOffsets",
    "startingTimestamp", "startingOffsetsByTimestamp", "endingTimestamp",
    "endingOffsetsByTimestamp", "startingOffsetsByTimestampStrategy", "failOnDataLoss",
    "kafkaConsumer.pollTimeoutMs", "fetchOffset.numRetries", "fetchOffset.retryIntervalMs",
    "maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay", "minPartitions",
    "maxRecordsPerPartition", "groupIdPrefix", "includeHeaders")
SINK_OPTIONS = ("topic", "deliveryGuarantee", "transactionalIdPrefix", "transactionTimeoutMs")


# Exactly-once sink: each task's transaction waits open for the driver's commit; it must outlive
# the slowest task of the batch (and stay within the broker's transaction.max.timeout.ms).
DEFAULT_TXN_PREFIX = "gregor-spark"
DEFAULT_SINK_TXN_TIMEOUT_MS = 900_000


class OptionError(ValueError):
    """An option of the gregor data source is missing, malformed or not allowed here."""


def _get(options: Mapping[str, str], name: str) -> str | None:
    """Case-insensitive lookup: Spark hands options to Python sources lower-cased or as given."""
    lowered = name.lower()
    for k, v in options.items():
        if k.lower() == lowered:
            return None if v is None else str(v)
    return None


def wants_headers(options: Mapping[str, str]) -> bool:
    """includeHeaders: the read schema depends on it before any reader exists."""
    return _bool(options, "includeHeaders", False)


def client_config(options: Mapping[str, str]) -> dict[str, str]:
    """Every `kafka.*` option, prefix stripped, for gregor's client config."""
    return {k[len("kafka."):]: str(v) for k, v in options.items()
            if k.lower().startswith("kafka.")}


def _int(options: Mapping[str, str], name: str, default: int, minimum: int) -> int:
    raw = _get(options, name)
    if raw is None:
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise OptionError(f"option '{name}' must be an integer >= {minimum}, got {raw!r}")
    return value


def _positive_int(options: Mapping[str, str], name: str) -> int | None:
    raw = _get(options, name)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise OptionError(f"option '{name}' must be a positive integer, got {raw!r}") from None
    if value <= 0:
        raise OptionError(f"option '{name}' must be a positive integer, got {raw!r}")
    return value


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = _get(options, name)
    if raw is None:
        return default
    if raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    raise OptionError(f"option '{name}' must be 'true' or 'false', got {raw!r}")


_DURATION = re.compile(r"^\s*(\d+)\s*(ms|milliseconds?|s|sec|seconds?|m|min|minutes?|h|hours?|d|days?)?\s*$")
_UNIT_MS = {"ms": 1, "millisecond": 1, "milliseconds": 1, "s": 1000, "sec": 1000, "second": 1000,
            "seconds": 1000, "m": 60_000, "min": 60_000, "minute": 60_000, "minutes": 60_000,
            "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000, "d": 86_400_000,
            "day": 86_400_000, "days": 86_400_000}


def parse_duration_ms(name: str, raw: str) -> int:
    """'15m', '30s', '500ms', '2 hours' or a bare number of milliseconds."""
    m = _DURATION.match(raw)
    if not m:
        raise OptionError(f"option '{name}' must be a duration such as '30s', '15m' or '500ms', got {raw!r}")
    return int(m.group(1)) * _UNIT_MS[m.group(2) or "ms"]


@dataclass(frozen=True)
class Subscription:
    """Which topic-partitions to read: exactly one of the three ways of the connector."""
    kind: str  # "subscribe" | "subscribePattern" | "assign"
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[tuple[str, int], ...] = ()

    def matches(self, topic: str) -> bool:
        """subscribePattern is a Java regex *searched* in the name, as Spark's admin-based
        offset reader does (`findFirstIn`): 'events' selects 'old-events-2'."""
        if self.kind == "subscribe":
            return topic in self.topics
        if self.kind == "subscribePattern":
            return java_regex_search(_java_pattern(self.pattern), topic)
        return any(t == topic for t, _ in self.assigned)


@functools.lru_cache(maxsize=64)
def _java_pattern(pattern: str) -> re.Pattern:
    return compile_java_regex(pattern)


def parse_subscription(options: Mapping[str, str]) -> Subscription:
    given = {name: _get(options, name) for name in ("subscribe", "subscribePattern", "assign")}
    given = {k: v for k, v in given.items() if v is not None}
    if not given:
        raise OptionError("one of the options 'subscribe' (comma-separated topics), 'subscribePattern' "
                          "(a regular expression) or 'assign' (JSON such as {\"topicA\":[0,1]}) must be "
                          "set to say which topics to read")
    if len(given) > 1:
        raise OptionError(f"only one of 'subscribe', 'subscribePattern' and 'assign' may be set; got "
                          f"{', '.join(sorted(given))}")
    kind, raw = next(iter(given.items()))
    if kind == "subscribe":
        topics = tuple(t.strip() for t in raw.split(",") if t.strip())
        if not topics:
            raise OptionError(f"option 'subscribe' names no topic (got {raw!r}); give comma-separated "
                              "topic names")
        return Subscription(kind, topics=topics)
    if kind == "subscribePattern":
        pattern = raw.strip()  # Spark trims it too
        if not pattern:
            raise OptionError("option 'subscribePattern' is empty; give a regular expression such as 'events-.*'")
        try:
            _java_pattern(pattern)
        except JavaRegexError as e:
            raise OptionError(f"option 'subscribePattern' is not a valid (Java) regular expression: {e}") from None
        return Subscription(kind, pattern=pattern)
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as e:
        raise OptionError(f"option 'assign' is not valid JSON ({e.msg} at position {e.pos}); expected "
                          f"something like {{\"topicA\":[0,1],\"topicB\":[2]}}, got {raw!r}") from None
    if not isinstance(parsed, dict) or not parsed or not all(
            isinstance(p, list) and all(isinstance(i, int) and i >= 0 for i in p) for p in parsed.values()):
        raise OptionError(f"option 'assign' must map topic names to lists of partition numbers, such as "
                          f"{{\"topicA\":[0,1]}}; got {raw!r}")
    assigned = tuple(sorted((t, p) for t, ps in parsed.items() for p in ps))
    if not assigned:
        raise OptionError(f"option 'assign' names no partition: {raw!r}")
    return Subscription(kind, assigned=assigned)


@dataclass(frozen=True)
class OffsetSpec:
    """Where a read starts or ends, before it is resolved against the broker.

    kind: "earliest" | "latest" | "offsets" (per-partition JSON, -2/-1 allowed) |
    "timestamp" (one timestamp for every partition) | "timestamps" (per-partition JSON)."""
    kind: str
    per_partition: Mapping[tuple[str, int], int] = field(default_factory=dict)
    timestamp: int | None = None


def _partition_json(name: str, raw: str, example: str) -> dict[tuple[str, int], int]:
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as e:
        raise OptionError(f"option '{name}' is not valid JSON ({e.msg} at position {e.pos}); expected "
                          f"'earliest', 'latest' or JSON such as {example}, got {raw!r}") from None
    out: dict[tuple[str, int], int] = {}
    if not isinstance(parsed, dict):
        raise OptionError(f"option '{name}' must be a JSON object such as {example}, got {raw!r}")
    for topic, parts in parsed.items():
        if not isinstance(parts, dict):
            raise OptionError(f"option '{name}': topic {topic!r} must map partition numbers to values, "
                              f"as in {example}; got {parts!r}")
        for p, v in parts.items():
            try:
                partition = int(p)
            except ValueError:
                raise OptionError(f"option '{name}': {p!r} in topic {topic!r} is not a partition number") from None
            if not isinstance(v, int) or isinstance(v, bool):
                raise OptionError(f"option '{name}': value for {topic}-{partition} must be an integer, got {v!r}")
            out[(topic, partition)] = v
    return out


def _offset_spec(options, name: str, default: str) -> OffsetSpec:
    raw = _get(options, name)
    raw = default if raw is None else raw.strip()
    if raw.lower() in ("earliest", "latest"):
        return OffsetSpec(raw.lower())
    per = _partition_json(name, raw, '{"topicA":{"0":23,"1":-2},"topicB":{"0":-1}}')
    for tp, off in per.items():
        if off < LATEST - 1:
            raise OptionError(f"option '{name}': offset {off} for {tp[0]}-{tp[1]} is not valid; use -2 for "
                              "earliest, -1 for latest or a non-negative offset")
    return OffsetSpec("offsets", per)


def _timestamp_spec(options, single: str, per_name: str) -> OffsetSpec | None:
    raw = _get(options, single)
    if raw is not None:
        try:
            ts = int(raw)
        except ValueError:
            raise OptionError(f"option '{single}' must be a timestamp in milliseconds since the epoch, "
                              f"got {raw!r}") from None
        return OffsetSpec("timestamp", timestamp=ts)
    raw = _get(options, per_name)
    if raw is not None:
        return OffsetSpec("timestamps", _partition_json(per_name, raw, '{"topicA":{"0":1700000000000}}'))
    return None


@dataclass(frozen=True)
class SourceOptions:
    """Everything a reader needs, validated; picklable so executors get it with their task."""
    client: dict
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec | None
    streaming: bool
    include_headers: bool = False
    fail_on_data_loss: bool = True
    min_partitions: int | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = DEFAULT_MAX_TRIGGER_DELAY_MS
    timestamp_strategy: str = "error"  # startingOffsetsByTimestampStrategy: "error" | "latest"
    poll_timeout_ms: int = DEFAULT_POLL_TIMEOUT_MS
    max_records_per_partition: int | None = None
    fetch_offset_retries: int = DEFAULT_FETCH_OFFSET_RETRIES
    fetch_offset_retry_interval_ms: int = DEFAULT_FETCH_OFFSET_RETRY_INTERVAL_MS
    # group.id of the executors' consumers (kafka.group.id, or `<groupIdPrefix>-<uuid>`
    # + "-executor", as Spark names them); the driver's consumer uses `-driver`.
    group_id: str = ""
    custom_group_id: bool = False


def _check_client_options(client: Mapping[str, str], rejected: Mapping[str, str], where: str) -> None:
    if not client.get("bootstrap.servers"):
        raise OptionError(f"option 'kafka.bootstrap.servers' must be set for the gregor {where} "
                          "(for example 'localhost:9092')")
    for key, hint in rejected.items():
        if key in client:
            raise OptionError(f"option 'kafka.{key}' is not supported by the gregor {where}: {hint}")


def parse_source_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    where = "streaming source" if streaming else "batch source"
    client = client_config(options)
    _check_client_options(client, _REJECTED_SOURCE_CLIENT_OPTIONS, where)
    subscription = parse_subscription(options)

    starting = (_timestamp_spec(options, "startingTimestamp", "startingOffsetsByTimestamp")
                or _offset_spec(options, "startingOffsets", "latest" if streaming else "earliest"))
    ending = None
    if streaming:
        for name in ("endingOffsets", "endingOffsetsByTimestamp"):
            if _get(options, name) is not None:
                raise OptionError(f"option '{name}' is for batch queries only; a streaming query keeps "
                                  "reading new records (use trigger(availableNow=True) to stop at the end)")
        if _get(options, "endingTimestamp") is not None:
            log.warning("option 'endingTimestamp' is ignored by streaming queries (as Spark's Kafka "
                        "source ignores it); use trigger(availableNow=True) to stop at the end")
    else:
        ending = (_timestamp_spec(options, "endingTimestamp", "endingOffsetsByTimestamp")
                  or _offset_spec(options, "endingOffsets", "latest"))
        if starting.kind == "latest":
            raise OptionError("startingOffsets='latest' is not allowed in a batch query (it would read "
                              "nothing); use 'earliest', per-partition JSON or a starting timestamp")
        if ending.kind == "earliest":
            raise OptionError("endingOffsets='earliest' is not allowed in a batch query (it would read "
                              "nothing); use 'latest', per-partition JSON or an ending timestamp")
        for (t, p), off in starting.per_partition.items() if starting.kind == "offsets" else ():
            if off == LATEST:
                raise OptionError(f"startingOffsets for {t}-{p} is -1 (latest), which is not allowed in a "
                                  "batch query; use -2 (earliest) or an explicit offset")
        for (t, p), off in ending.per_partition.items() if ending.kind == "offsets" else ():
            if off == EARLIEST:
                raise OptionError(f"endingOffsets for {t}-{p} is -2 (earliest), which is not allowed in a "
                                  "batch query; use -1 (latest) or an explicit offset")
        for name in _STREAM_ONLY:
            if _get(options, name) is not None:
                # Spark logs this and carries on: one option set can serve both kinds of query.
                log.warning("option '%s' is ignored in batch queries (it applies to streaming "
                            "queries only)", name)
    if subscription.kind == "assign":
        for spec, name in ((starting, "startingOffsets"), (ending, "endingOffsets")):
            if spec is not None and spec.kind in ("offsets", "timestamps"):
                extra = set(spec.per_partition) - set(subscription.assigned)
                if extra:
                    t, p = sorted(extra)[0]
                    raise OptionError(f"option '{name}' names {t}-{p}, which is not in 'assign'; "
                                      "list the same partitions in both")

    strategy = (_get(options, "startingOffsetsByTimestampStrategy") or "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise OptionError("option 'startingOffsetsByTimestampStrategy' must be 'error' or 'latest', "
                          f"got {strategy!r}")
    delay_raw = _get(options, "maxTriggerDelay")
    max_per_trigger = _positive_int(options, "maxOffsetsPerTrigger")
    min_per_trigger = _positive_int(options, "minOffsetsPerTrigger")
    if max_per_trigger and min_per_trigger and min_per_trigger > max_per_trigger:
        raise OptionError(f"the value of minOffsetsPerTrigger ({min_per_trigger}) is higher than "
                          f"maxOffsetsPerTrigger ({max_per_trigger}); a micro-batch could never hold "
                          "enough records. Lower minOffsetsPerTrigger or raise maxOffsetsPerTrigger")
    group_id = client.get("group.id")
    if group_id is not None:
        log.warning(CUSTOM_GROUP_ID_WARNING)
        if _get(options, "groupIdPrefix") is not None:
            log.warning("option 'groupIdPrefix' is ignored because 'kafka.group.id' is set")
    else:
        prefix = _get(options, "groupIdPrefix")
        prefix = (STREAM_GROUP_PREFIX if streaming else BATCH_GROUP_PREFIX) if prefix is None else prefix
        group_id = f"{prefix}-{uuid.uuid4()}"
    if not streaming:
        max_per_trigger = min_per_trigger = None
    return SourceOptions(
        client=client,
        subscription=subscription,
        starting=starting,
        ending=ending,
        streaming=streaming,
        include_headers=_bool(options, "includeHeaders", False),
        fail_on_data_loss=_bool(options, "failOnDataLoss", True),
        min_partitions=_positive_int(options, "minPartitions"),
        max_offsets_per_trigger=max_per_trigger,
        min_offsets_per_trigger=min_per_trigger,
        max_trigger_delay_ms=(DEFAULT_MAX_TRIGGER_DELAY_MS if delay_raw is None
                              else parse_duration_ms("maxTriggerDelay", delay_raw)),
        timestamp_strategy=strategy,
        poll_timeout_ms=_positive_int(options, "kafkaConsumer.pollTimeoutMs") or DEFAULT_POLL_TIMEOUT_MS,
        max_records_per_partition=_positive_int(options, "maxRecordsPerPartition"),
        fetch_offset_retries=_int(options, "fetchOffset.numRetries", DEFAULT_FETCH_OFFSET_RETRIES, 1),
        fetch_offset_retry_interval_ms=_int(options, "fetchOffset.retryIntervalMs",
                                            DEFAULT_FETCH_OFFSET_RETRY_INTERVAL_MS, 0),
        group_id=group_id,
        custom_group_id=client.get("group.id") is not None,
    )


def validate_source_options(options: Mapping[str, str]) -> None:
    """Check a read's options when the DataFrame is created (Spark's Kafka source fails at
    load(), before any action). Whether the read is a batch or a streaming one is not known
    yet at that point, so only what is wrong for both kinds fails here; the rest fails when
    the query plans."""
    try:
        parse_source_options(options, streaming=True)
    except OptionError:
        parse_source_options(options, streaming=False)


@dataclass(frozen=True)
class SinkOptions:
    client: dict
    topic: str | None  # the 'topic' option; overrides a topic column when set
    exactly_once: bool = False           # deliveryGuarantee=exactly-once
    transactional_id_prefix: str = DEFAULT_TXN_PREFIX
    transaction_timeout_ms: int = DEFAULT_SINK_TXN_TIMEOUT_MS


def parse_sink_options(options: Mapping[str, str], column_names: list[str]) -> SinkOptions:
    client = client_config(options)
    _check_client_options(client, _REJECTED_SINK_CLIENT_OPTIONS, "sink")
    topic = _get(options, "topic")
    if topic is not None and not topic.strip():
        raise OptionError("option 'topic' is empty; give a topic name or drop it and use a 'topic' column")
    names = set(column_names)  # case-sensitive, as Spark's KafkaWriter matches them
    if "value" not in names:
        raise OptionError("the DataFrame written to gregor needs a 'value' column (string or binary; "
                          "column names are case-sensitive, as for Spark's Kafka sink); "
                          f"it has {', '.join(column_names) or 'no columns'}")
    if topic is None and "topic" not in names:
        raise OptionError("no topic to write to: set the option 'topic' or add a 'topic' column")
    guarantee = (_get(options, "deliveryGuarantee") or "at-least-once").strip().lower()
    if guarantee not in ("at-least-once", "exactly-once"):
        raise OptionError(f"option 'deliveryGuarantee' is {guarantee!r}; use 'at-least-once' "
                          "(the default, as Spark's Kafka sink) or 'exactly-once'")
    exactly_once = guarantee == "exactly-once"
    prefix = (_get(options, "transactionalIdPrefix") or DEFAULT_TXN_PREFIX).strip()
    if exactly_once:
        if topic is None:
            raise OptionError("deliveryGuarantee=exactly-once needs the option 'topic' (the "
                              "sink records each task's progress in that topic's group offsets)")
        if not prefix:
            raise OptionError("option 'transactionalIdPrefix' is empty")
        for bad in ("transactional.id", "enable.idempotence"):
            if bad in client:
                raise OptionError(f"option 'kafka.{bad}' is set by the exactly-once sink itself "
                                  "(one transactional id per task); drop it")
    timeout = _positive_int(options, "transactionTimeoutMs") or DEFAULT_SINK_TXN_TIMEOUT_MS
    return SinkOptions(client=client, topic=topic.strip() if topic else None,
                       exactly_once=exactly_once, transactional_id_prefix=prefix,
                       transaction_timeout_ms=timeout)
