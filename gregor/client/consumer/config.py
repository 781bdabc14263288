"""The consumer's configuration options: Kafka's consumer settings that gregor honours, with
Java's defaults (partition.assignment.strategy: librdkafka's "range,roundrobin")."""
from __future__ import annotations

from ..config import COMMON_OPTIONS, Option
from ..errors import ConfigError

_RESET_ALIASES = {"smallest": "earliest", "beginning": "earliest", "largest": "latest",
                  "end": "latest", "error": "none"}


def _reset_policy(v: str) -> str:
    v = _RESET_ALIASES.get(v.strip().lower(), v.strip().lower())
    if v not in ("earliest", "latest", "none"):
        raise ConfigError(f"config 'auto.offset.reset': {v!r} is not one of earliest, latest, "
                          "none")
    return v


CONSUMER_OPTIONS: list[Option] = COMMON_OPTIONS + [
    Option("group.id", None, None, "the consumer group subscribe() joins and commit() uses"),
    Option("auto.offset.reset", "latest", str, validate=_reset_policy),
    Option("fetch.min.bytes", 1, int, min=0),
    Option("fetch.max.wait.ms", 500, int, min=0),
    Option("max.partition.fetch.bytes", 1048576, int, min=1),
    Option("fetch.max.bytes", 52428800, int, min=1),
    Option("max.poll.records", 500, int, min=1),
    Option("isolation.level", "read_uncommitted", str,
           choices=("read_uncommitted", "read_committed")),
    Option("check.crcs", True, bool),
    Option("key.deserializer", None, object),
    Option("value.deserializer", None, object),
    Option("allow.auto.create.topics", True, bool),
    Option("client.rack", "", str),
    # Group mode (subscribe()); auto commit applies to subscribed consumers only.
    Option("enable.auto.commit", True, bool),
    Option("auto.commit.interval.ms", 5000, int, min=1),
    Option("session.timeout.ms", 45000, int, min=1),
    Option("heartbeat.interval.ms", 3000, int, min=1),
    Option("max.poll.interval.ms", 300000, int, min=1),
    Option("group.instance.id", None, None),
    Option("partition.assignment.strategy", None, None),
    # confluent-kafka's callback for asynchronous commits: on_commit(error, {tp: offset})
    Option("on_commit", None, object),
    Option("default.api.timeout.ms", 60000, int, min=1),
]
