import pytest

from gregor.log import LONG_MAX, LogConfig


def test_defaults_are_kafkas():
    c = LogConfig()
    assert c.segment_bytes == 1 << 30
    assert c.segment_ms == 7 * 24 * 3600 * 1000
    assert c.retention_ms == 7 * 24 * 3600 * 1000
    assert c.retention_bytes == -1
    assert c.flush_messages == LONG_MAX == 9223372036854775807
    assert c.flush_ms == LONG_MAX
    assert c.index_interval_bytes == 4096
    assert c.segment_index_bytes == 10 * 1024 * 1024
    assert c.max_message_bytes == 1048588
    assert c.message_timestamp_type == "CreateTime"
    assert c.flush_policy == "inline"


def test_from_dict_accepts_dotted_snake_and_string_values():
    c = LogConfig.from_dict({"segment.bytes": "1000", "retention_ms": 5,
                             "message.timestamp.type": "LogAppendTime",
                             "log.flush.policy": "group",
                             "producer.reject.unknown.sequence": "true"})
    assert c.segment_bytes == 1000
    assert c.retention_ms == 5
    assert c.message_timestamp_type == "LogAppendTime"
    assert c.flush_policy == "group"
    assert c.producer_reject_unknown_sequence is True


def test_broker_level_names_are_scaled():
    c = LogConfig.from_dict({"log.retention.hours": 2, "log.roll.hours": 1,
                             "log.flush.interval.messages": 10, "message.max.bytes": 2000,
                             "log.retention.bytes": -1})
    assert c.retention_ms == 2 * 3600 * 1000
    assert c.segment_ms == 3600 * 1000
    assert c.flush_messages == 10
    assert c.max_message_bytes == 2000
    assert c.retention_bytes == -1


def test_unknown_key_is_named():
    with pytest.raises(ValueError, match="segmnt.bytes"):
        LogConfig.from_dict({"segmnt.bytes": 1})


@pytest.mark.parametrize("kwargs", [{"segment_bytes": 10}, {"segment_bytes": 1 << 31},
                                    {"message_timestamp_type": "Whenever"},
                                    {"flush_policy": "sometimes"}, {"flush_messages": 0}])
def test_invalid_values_are_rejected(kwargs):
    with pytest.raises(ValueError):
        LogConfig(**kwargs)


def test_with_overrides_keeps_the_rest():
    base = LogConfig(segment_bytes=5000, retention_ms=10)
    c = base.with_overrides({"retention.ms": 99})
    assert c.retention_ms == 99
    assert c.segment_bytes == 5000


def test_none_values_keep_the_default():
    assert LogConfig.from_dict({"retention.ms": None}).retention_ms == LogConfig().retention_ms
