"""The parity table of docs/spark.md stays true: every option of Spark's Kafka connector has a
row, every option gregor reads has one, the statuses are the known ones, and each default the
table states is the one the code uses. (No Spark needed.)"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from gregor.spark import options as opts_module
from gregor.spark.options import (SINK_OPTIONS, SOURCE_OPTIONS, parse_sink_options,
                                  parse_source_options)

DOC = Path(__file__).resolve().parents[2] / "docs" / "spark.md"

# Spark's own option keys (KafkaSourceProvider's constants and the integration guide's source
# and sink tables, Spark 4.x), spelt as the guide spells them.
SPARK_OPTIONS = {
    "assign", "subscribe", "subscribePattern", "kafka.bootstrap.servers", "startingTimestamp",
    "startingOffsetsByTimestamp", "startingOffsets", "endingTimestamp", "endingOffsetsByTimestamp",
    "endingOffsets", "failOnDataLoss", "kafkaConsumer.pollTimeoutMs", "fetchOffset.numRetries",
    "fetchOffset.retryIntervalMs", "maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay",
    "minPartitions", "maxRecordsPerPartition", "groupIdPrefix", "kafka.group.id", "includeHeaders",
    "startingOffsetsByTimestampStrategy", "topic",
}
STATUSES = {"same", "differs", "extension", "not possible"}
BASE = {"kafka.bootstrap.servers": "x:9092"}


def table(name: str) -> list[list[str]]:
    text = DOC.read_text()
    m = re.search(rf"<!-- parity-table:{name} -->\n(.*?)\n<!-- /parity-table:{name} -->", text, re.S)
    assert m, f"docs/spark.md has no parity-table:{name} block"
    rows = [line for line in m.group(1).splitlines() if line.startswith("|")][2:]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]


def names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def option_rows() -> dict[str, list[str]]:
    out = {}
    for row in table("options"):
        assert len(row) == 5, row
        (name,) = names(row[0])
        assert name not in out, f"{name} has two rows"
        out[name] = row
    return out


def test_every_spark_option_and_every_option_gregor_reads_has_a_row():
    rows = option_rows()
    missing = (SPARK_OPTIONS | set(SOURCE_OPTIONS) | set(SINK_OPTIONS)) - set(rows)
    assert not missing, f"docs/spark.md parity table lacks {sorted(missing)}"
    for name, row in rows.items():
        assert row[2] in STATUSES, f"{name}: status {row[2]!r}"
        if name.startswith("kafka."):
            continue
        side = row[1]
        if side in ("source", "both"):
            assert name in SOURCE_OPTIONS or name not in SPARK_OPTIONS or name == "topic", name
        if row[2] == "extension":
            assert name not in SPARK_OPTIONS, f"{name} is Spark's, not an extension"
        else:
            assert name in SPARK_OPTIONS or name.startswith("kafka."), f"{name}: not Spark's"


def test_the_code_reads_only_registered_options():
    """Every option name options.py looks up is in SOURCE_OPTIONS / SINK_OPTIONS (so in the
    table): a new option cannot slip in undocumented."""
    source = Path(opts_module.__file__).read_text()
    looked_up = set(re.findall(r'_(?:get|bool|int|positive_int|offset_spec)\(options, "([A-Za-z.]+)"', source))
    looked_up |= set(re.findall(r'_timestamp_spec\(options, "([A-Za-z]+)", "([A-Za-z]+)"', source)[0])
    looked_up |= set(re.findall(r'_timestamp_spec\(options, "([A-Za-z]+)", "([A-Za-z]+)"', source)[1])
    unregistered = looked_up - set(SOURCE_OPTIONS) - set(SINK_OPTIONS)
    assert not unregistered, f"options.py reads {sorted(unregistered)} without registering them"


def _defaults() -> dict[str, str]:
    """What the code does when each option is not given, in the table's words."""
    stream = parse_source_options({**BASE, "subscribe": "t"}, streaming=True)
    batch = parse_source_options({**BASE, "subscribe": "t"}, streaming=False)
    sink = parse_sink_options({**BASE, "topic": "t"}, ["value"])
    delay_ms = stream.max_trigger_delay_ms
    assert delay_ms % 60_000 == 0
    return {
        "startingOffsets": f"`{stream.starting.kind}` (stream), `{batch.starting.kind}` (batch)",
        "endingOffsets": f"`{batch.ending.kind}`",
        "startingOffsetsByTimestampStrategy": f"`{stream.timestamp_strategy}`",
        "failOnDataLoss": f"`{str(stream.fail_on_data_loss).lower()}`",
        "kafkaConsumer.pollTimeoutMs": f"`{stream.poll_timeout_ms}`",
        "fetchOffset.numRetries": f"`{stream.fetch_offset_retries}`",
        "fetchOffset.retryIntervalMs": f"`{stream.fetch_offset_retry_interval_ms}`",
        "maxTriggerDelay": f"`{delay_ms // 60_000}m`",
        "groupIdPrefix": (f"`{stream.group_id.rsplit('-', 5)[0]}` (stream), "
                          f"`{batch.group_id.rsplit('-', 5)[0]}` (batch)"),
        "includeHeaders": f"`{str(stream.include_headers).lower()}`",
        "deliveryGuarantee": "`exactly-once`" if sink.exactly_once else "`at-least-once`",
        "transactionalIdPrefix": f"`{sink.transactional_id_prefix}`",
        "transactionTimeoutMs": f"`{sink.transaction_timeout_ms}`",
    }


@pytest.mark.parametrize("name", sorted(_defaults()))
def test_defaults_in_the_table_are_the_codes(name):
    assert option_rows()[name][3] == _defaults()[name]


def test_options_without_a_stated_default_have_none_in_the_code():
    stream = parse_source_options({**BASE, "subscribe": "t"}, streaming=True)
    assert stream.max_offsets_per_trigger is None and stream.min_offsets_per_trigger is None
    assert stream.min_partitions is None and stream.max_records_per_partition is None
    for name, row in option_rows().items():
        if name not in _defaults():
            assert row[3] == "", f"{name}: the table states a default the test does not check"


def test_behaviour_rows_have_known_statuses_and_name_an_alternative_when_not_possible():
    rows = table("behaviour")
    assert rows
    for row in rows:
        assert len(row) == 3 and row[1] in STATUSES, row
        if row[1] == "not possible":
            assert row[2], f"{row[0]}: a 'not possible' row must say what to do instead"
