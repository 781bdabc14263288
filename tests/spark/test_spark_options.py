"""Option parsing of the gregor data source: defaults, rules and error messages (no Spark)."""
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
    assert sub.matches("ev-1") and not sub.matches("xev-1")
    with pytest.raises(OptionError, match="not a valid regular expression"):
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
    with pytest.raises(OptionError, match="streaming queries only"):
        src(subscribe="t", maxOffsetsPerTrigger="10")


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
    assert parse_sink_options(BASE, ["value", "topic"]).topic is None
    with pytest.raises(OptionError, match="needs a 'value' column"):
        parse_sink_options({**BASE, "topic": "t"}, ["key"])
    with pytest.raises(OptionError, match="no topic to write to"):
        parse_sink_options(BASE, ["value"])
