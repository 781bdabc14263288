"""Spark's Kafka source metrics (offsets behind latest) from a progress's offsets."""
import pytest

pytest.importorskip("pyspark")

from gregor.spark.metrics import offsets_behind_latest, source_metrics  # noqa: E402


def test_the_three_figures_per_kafka_shaped_source():
    progress = {"sources": [
        {"description": "rate", "startOffset": 3, "endOffset": 5, "latestOffset": 9},
        {"description": "gregor", "endOffset": '{"t":{"0":10,"1":4}}',
         "latestOffset": {"t": {"0": 15, "1": 4}}},
    ]}
    assert offsets_behind_latest(progress) == {1: {"minOffsetsBehindLatest": "0",
                                                   "maxOffsetsBehindLatest": "5",
                                                   "avgOffsetsBehindLatest": "2.5"}}


def test_missing_offsets_give_nothing():
    assert source_metrics(None, '{"t":{"0":1}}') is None
    assert source_metrics('{"t":{"0":1}}', None) is None
    assert source_metrics("not json", "{}") is None
    # a partition the batch has not reached yet (new) is left out, as in Spark
    assert source_metrics({"t": {"0": 5, "1": 7}}, {"t": {"0": 5}}) == {
        "minOffsetsBehindLatest": "0", "maxOffsetsBehindLatest": "0", "avgOffsetsBehindLatest": "0.0"}
