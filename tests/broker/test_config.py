import pytest

from gregor.broker.config import (BrokerConfig, ConfigError, parse_properties,
                                  validate_topic_configs)


def test_kafka_defaults():
    cfg = BrokerConfig()
    assert cfg["num.partitions"] == 1
    assert cfg["message.max.bytes"] == 1048588
    assert cfg["socket.request.max.bytes"] == 104857600
    assert cfg["auto.create.topics.enable"] is True
    assert cfg["min.insync.replicas"] == 1
    assert cfg.retention_ms() == 168 * 3600 * 1000
    assert cfg.is_default("num.partitions")


def test_properties_format():
    text = ("# comment\n! also a comment\n\nnum.partitions=3\nlog.dirs : /data/x\n"
            "auto.create.topics.enable false\nlong.value=a\\\n    b\nkey\\=with\\:seps=v\\tw\n")
    props = parse_properties(text)
    assert props == {"num.partitions": "3", "log.dirs": "/data/x",
                     "auto.create.topics.enable": "false", "long.value": "ab",
                     "key=with:seps": "v\tw"}


def test_load_file_then_sets_then_options(tmp_path):
    f = tmp_path / "server.properties"
    f.write_text("num.partitions=3\nmessage.max.bytes=2000\nsome.unknown=1\n")
    cfg = BrokerConfig.load(str(f), ["num.partitions=5", "log_retention_ms=1000"],
                            **{"broker.id": 7})
    assert cfg["num.partitions"] == 5            # --set wins over the file
    assert cfg["message.max.bytes"] == 2000
    assert cfg.retention_ms() == 1000            # python spelling accepted
    assert cfg.broker_id == 7
    assert cfg.unknown == {"some.unknown": "1"}
    assert not cfg.is_default("num.partitions")


def test_bad_values_are_refused_with_the_setting_name():
    with pytest.raises(ConfigError, match="num.partitions"):
        BrokerConfig.load(None, ["num.partitions=many"])
    with pytest.raises(ConfigError, match="auto.create.topics.enable"):
        BrokerConfig.load(None, ["auto.create.topics.enable=maybe"])
    with pytest.raises(ConfigError, match="key=value"):
        BrokerConfig.load(None, ["num.partitions"])


def test_topic_defaults_follow_broker_synonyms():
    cfg = BrokerConfig({"log.segment.bytes": "1000", "log.retention.hours": "1",
                        "message.max.bytes": 500})
    d = cfg.topic_defaults()
    assert d["segment.bytes"] == 1000
    assert d["retention.ms"] == 3600 * 1000
    assert d["max.message.bytes"] == 500
    assert d["cleanup.policy"] == "delete"


def test_topic_config_validation():
    assert validate_topic_configs({"retention.ms": "10", "cleanup.policy": "delete"}) == \
        {"retention.ms": 10, "cleanup.policy": "delete"}
    with pytest.raises(ConfigError, match="unknown topic config"):
        validate_topic_configs({"retention.mss": "1"})
    with pytest.raises(ConfigError):
        validate_topic_configs({"message.timestamp.type": "Whenever"})
    with pytest.raises(ConfigError):
        validate_topic_configs({"min.insync.replicas": "0"})
