"""Option parsing of the gregor data source: defaults, rules and error messages (no Spark)."""
import logging

import pytest

from gregor.spark.options import (EARLIEST, LATEST, OptionError, parse_duration_ms, parse_sink_options,
                                  parse_source_options)

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def src(streaming=False, **opts):
    return parse_source_options({**BASE, **opts}, streaming=streaming)


def test_defaults_match_the_kafka_connector():
    batch = src(subscribe="a")
    assert (batch.starting.kind, batch.ending.kind) == ("earliest", "latest")
    stream = src(streaming=True, subscribe="a")
    assert stream.starting.kind == "latest" and stream.ending is None
    assert stream.fail_on_data_loss is True and stream.include_headers is False
    assert stream.max_trigger_delay_ms == 15 * 60 * 1000


def test_kafka_options_pass_through_to_the_client():
    o = src(subscribe="a", **{"kafka.linger.ms": "5", "kafka.client.id": "x"})
    assert o.client == {"bootstrap.servers": "127.0.0.1:9092", "linger.ms": "5", "client.id": "x"}


def test_unknown_kafka_keys_are_logged_and_dropped_per_client(caplog, monkeypatch):
    """One option dict for a source and a sink, as Spark jobs share them: each client gets the
    keys it knows; the rest is logged once (Kafka's clients warn likewise) instead of failing."""
    from gregor.client.consumer import Consumer
    from gregor.client.producer.settings import producer_config
    from gregor.spark.client import consumer_config
    from gregor.spark import kafka_params
    from gregor.spark.kafka_params import producer_params
    monkeypatch.setattr(kafka_params, "_warned", set())   # logged once per process and key
    shared = {"bootstrap.servers": "127.0.0.1:9092", "linger.ms": "5", "group.id": "acl-group",
              "isolation.level": "read_committed", "receive.buffer.bytes": "65536",
              "client.dns.lookup": "use_all_dns_ips"}
    with caplog.at_level(logging.WARNING, logger="gregor.spark"):
        cfg = consumer_config(shared, "spark-kafka-source-x-executor")
        prod = producer_params(shared)
    assert cfg["group.id"] == "acl-group" and cfg["isolation.level"] == "read_committed"
    assert "linger.ms" not in cfg and "receive.buffer.bytes" not in cfg
    assert prod == {"bootstrap.servers": "127.0.0.1:9092", "linger.ms": "5"}
    logged = caplog.text
    assert "'kafka.linger.ms' was supplied but is not a known gregor consumer config" in logged
    assert "'kafka.group.id' was supplied but is not a known gregor producer config" in logged
    Consumer(cfg).close()          # the real clients accept what is left
    producer_config(prod)


def test_task_consumers_do_not_long_poll_unless_told():
    """A task's range exists, so its fetches need no broker-side wait; a long poll left in
    flight at the end of one range would hold the pooled consumer's next range behind it."""
    from gregor.spark.client import FETCH_MAX_WAIT_MS, consumer_config
    assert consumer_config({"bootstrap.servers": "h:1"})["fetch.max.wait.ms"] == \
        FETCH_MAX_WAIT_MS < 500
    assert consumer_config({"bootstrap.servers": "h:1",
                            "fetch.max.wait.ms": "250"})["fetch.max.wait.ms"] == "250"


def test_missing_subscription_names_the_three_options():
    with pytest.raises(OptionError, match="subscribe.*subscribePattern.*assign"):
        src()


def test_two_subscriptions_are_rejected():
    with pytest.raises(OptionError, match="only one of"):
        src(subscribe="a", subscribePattern="b.*")


def test_missing_bootstrap_servers():
    with pytest.raises(OptionError, match="kafka.bootstrap.servers"):
        parse_source_options({"subscribe": "a"}, streaming=False)


def test_subscribe_list_and_pattern():
    assert src(subscribe=" a, b ,").subscription.topics == ("a", "b")
    sub = src(subscribePattern="ev-.*").subscription
    assert sub.matches("ev-1") and sub.matches("xev-1")      # a search, as Spark's findFirstIn
    assert not src(subscribePattern="^ev-.*").subscription.matches("xev-1")
    with pytest.raises(OptionError, match="not a valid \\(Java\\) regular expression"):
        src(subscribePattern="(")
    with pytest.raises(OptionError, match="names no topic"):
        src(subscribe=" , ")


def test_assign_json():
    assert src(assign='{"t":[1,0],"u":[2]}').subscription.assigned == (("t", 0), ("t", 1), ("u", 2))
    with pytest.raises(OptionError, match="'assign' is not valid JSON"):
        src(assign="{t:[0]}")
    with pytest.raises(OptionError, match="must map topic names to lists"):
        src(assign='{"t": 0}')


def test_offsets_json_and_sentinels():
    o = src(subscribe="t", startingOffsets='{"t":{"0":5,"1":-2}}', endingOffsets='{"t":{"0":-1,"1":9}}')
    assert o.starting.per_partition == {("t", 0): 5, ("t", 1): EARLIEST}
    assert o.ending.per_partition == {("t", 0): LATEST, ("t", 1): 9}


def test_bad_offsets_json_says_what_is_expected():
    with pytest.raises(OptionError, match=r"'startingOffsets' is not valid JSON.*earliest"):
        src(subscribe="t", startingOffsets='{"t":{"0":5}')
    with pytest.raises(OptionError, match="not a partition number"):
        src(subscribe="t", startingOffsets='{"t":{"x":5}}')
    with pytest.raises(OptionError, match="must be an integer"):
        src(subscribe="t", startingOffsets='{"t":{"0":"5"}}')


def test_batch_only_and_stream_only_rules():
    with pytest.raises(OptionError, match="not allowed in a batch query"):
        src(subscribe="t", startingOffsets="latest")
    with pytest.raises(OptionError, match="not allowed in a batch query"):
        src(subscribe="t", endingOffsets="earliest")
    with pytest.raises(OptionError, match="-1 \\(latest\\)"):
        src(subscribe="t", startingOffsets='{"t":{"0":-1}}')
    with pytest.raises(OptionError, match="-2 \\(earliest\\)"):
        src(subscribe="t", endingOffsets='{"t":{"0":-2}}')
    with pytest.raises(OptionError, match="batch queries only"):
        src(streaming=True, subscribe="t", endingOffsets="latest")
    with pytest.raises(OptionError, match="batch queries only"):
        src(streaming=True, subscribe="t", endingOffsetsByTimestamp='{"t":{"0":5}}')
    # Spark ignores endingTimestamp in a stream
    assert src(streaming=True, subscribe="t", endingTimestamp="5").ending is None


def test_stream_only_options_are_ignored_with_a_warning_in_batch(caplog):
    with caplog.at_level(logging.WARNING, logger="gregor.spark"):
        o = src(subscribe="t", maxOffsetsPerTrigger="10", minOffsetsPerTrigger="2", maxTriggerDelay="1m")
    assert o.max_offsets_per_trigger is None and o.min_offsets_per_trigger is None
    for name in ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay"):
        assert f"option '{name}' is ignored in batch queries" in caplog.text


def test_min_offsets_must_not_exceed_max_offsets():
    with pytest.raises(OptionError, match=r"minOffsetsPerTrigger \(20\) is higher than maxOffsetsPerTrigger \(10\)"):
        src(streaming=True, subscribe="t", minOffsetsPerTrigger="20", maxOffsetsPerTrigger="10")
    o = src(streaming=True, subscribe="t", minOffsetsPerTrigger="10", maxOffsetsPerTrigger="10")
    assert (o.min_offsets_per_trigger, o.max_offsets_per_trigger) == (10, 10)


def test_partition_sizing_retries_and_group_ids(caplog):
    o = src(subscribe="t", maxRecordsPerPartition="1000", **{"fetchOffset.numRetries": "5",
                                                             "fetchOffset.retryIntervalMs": "20"})
    assert o.max_records_per_partition == 1000
    assert (o.fetch_offset_retries, o.fetch_offset_retry_interval_ms) == (5, 20)
    default = src(subscribe="t")
    assert (default.fetch_offset_retries, default.fetch_offset_retry_interval_ms) == (3, 1000)
    with pytest.raises(OptionError, match="'maxRecordsPerPartition' must be a positive integer"):
        src(subscribe="t", maxRecordsPerPartition="0")
    with pytest.raises(OptionError, match="'fetchOffset.numRetries' must be an integer >= 1"):
        src(subscribe="t", **{"fetchOffset.numRetries": "0"})
    # Spark's group ids: <prefix>-<uuid>, prefix spark-kafka-relation (batch) / -source (stream)
    assert default.group_id.startswith("spark-kafka-relation-") and not default.custom_group_id
    assert src(streaming=True, subscribe="t").group_id.startswith("spark-kafka-source-")
    assert src(subscribe="t", groupIdPrefix="acl-ok").group_id.startswith("acl-ok-")
    with caplog.at_level(logging.WARNING, logger="gregor.spark"):
        custom = src(subscribe="t", groupIdPrefix="ignored", **{"kafka.group.id": "mine"})
    assert custom.group_id == "mine" and custom.custom_group_id
    assert "'kafka.group.id' is set" in caplog.text and "'groupIdPrefix' is ignored" in caplog.text


def test_numbers_and_booleans_are_checked():
    assert src(streaming=True, subscribe="t", maxOffsetsPerTrigger="10").max_offsets_per_trigger == 10
    with pytest.raises(OptionError, match="'maxOffsetsPerTrigger' must be a positive integer"):
        src(streaming=True, subscribe="t", maxOffsetsPerTrigger="0")
    with pytest.raises(OptionError, match="'minPartitions' must be a positive integer"):
        src(subscribe="t", minPartitions="many")
    with pytest.raises(OptionError, match="'failOnDataLoss' must be 'true' or 'false'"):
        src(subscribe="t", failOnDataLoss="maybe")
    assert src(subscribe="t", failOnDataLoss="False").fail_on_data_loss is False


def test_timestamps_take_precedence_over_offsets():
    o = src(subscribe="t", startingTimestamp="1000", startingOffsets="earliest")
    assert (o.starting.kind, o.starting.timestamp) == ("timestamp", 1000)
    o = src(subscribe="t", endingOffsetsByTimestamp='{"t":{"0":2000}}')
    assert o.ending.kind == "timestamps" and o.ending.per_partition == {("t", 0): 2000}
    with pytest.raises(OptionError, match="milliseconds since the epoch"):
        src(subscribe="t", startingTimestamp="yesterday")


def test_rejected_client_options_say_what_to_use():
    with pytest.raises(OptionError, match="startingOffsets"):
        src(subscribe="t", **{"kafka.auto.offset.reset": "earliest"})
    with pytest.raises(OptionError, match="value.serializer"):
        parse_sink_options({**BASE, "topic": "t", "kafka.value.serializer": "x"}, ["value"])


def test_assign_and_offsets_must_agree():
    with pytest.raises(OptionError, match="not in 'assign'"):
        src(assign='{"t":[0]}', startingOffsets='{"t":{"0":1,"1":2}}')


def test_durations():
    assert parse_duration_ms("d", "15m") == 900_000
    assert parse_duration_ms("d", "500") == 500
    assert parse_duration_ms("d", "2 hours") == 7_200_000
    with pytest.raises(OptionError, match="duration"):
        parse_duration_ms("maxTriggerDelay", "soon")


def test_sink_needs_value_and_a_topic():
    assert parse_sink_options({**BASE, "topic": "t"}, ["value"]).topic == "t"
    with pytest.raises(OptionError, match="needs a 'value' column.*case-sensitive"):
        parse_sink_options({**BASE, "topic": "t"}, ["Value"])  # as Spark's KafkaWriter
    assert parse_sink_options(BASE, ["value", "topic"]).topic is None
    with pytest.raises(OptionError, match="needs a 'value' column"):
        parse_sink_options({**BASE, "topic": "t"}, ["key"])
    with pytest.raises(OptionError, match="no topic to write to"):
        parse_sink_options(BASE, ["value"])
