"""Subject name strategies, as Confluent names them: which registry subject a topic's key or
value schema lives under."""
from __future__ import annotations

from typing import NamedTuple


class SerializationContext(NamedTuple):
    """What a strategy sees: the topic and which field ("key" or "value"); shaped as
    confluent-kafka's, so its strategy functions work here too."""
    topic: str
    field: str = "value"
    headers: list | None = None


def topic_subject_name_strategy(ctx: SerializationContext, record_name: str | None) -> str:
    return f"{ctx.topic}-{ctx.field}"


def record_subject_name_strategy(ctx: SerializationContext, record_name: str | None) -> str:
    if not record_name:
        raise ValueError("the record subject name strategy needs a named schema "
                         "(an Avro record, a JSON Schema with a title, a Protobuf message)")
    return record_name


def topic_record_subject_name_strategy(ctx: SerializationContext,
                                       record_name: str | None) -> str:
    return f"{ctx.topic}-{record_subject_name_strategy(ctx, record_name)}"


STRATEGIES = {
    "topic": topic_subject_name_strategy,
    "record": record_subject_name_strategy,
    "topic_record": topic_record_subject_name_strategy,
    "TopicNameStrategy": topic_subject_name_strategy,
    "RecordNameStrategy": record_subject_name_strategy,
    "TopicRecordNameStrategy": topic_record_subject_name_strategy,
}


def strategy(value):
    """A strategy function from a name or a callable(ctx, record_name)."""
    if value is None:
        return topic_subject_name_strategy
    if callable(value):
        return value
    try:
        return STRATEGIES[value]
    except KeyError:
        raise ValueError(f"subject.name.strategy {value!r}: use one of "
                         f"{sorted(STRATEGIES)} or a function(ctx, record_name)") from None
