"""From hourly delay cells to the demo's findings: roll-ups computed in Spark, printed as tables,
drawn as a PNG chart and written as a short HTML report, with the Avro schemas the records
were written with (subject, version, id and text, as the Schema Registry holds them)."""
from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

LOCAL_TZ = "America/New_York"  # the airports' time zone, for hour-of-day findings
VISIBILITY_BUCKETS = [(0, 1, "< 1 mile"), (1, 3, "1-3 miles"), (3, 6, "3-6 miles"),
                      (6, 10, "6-10 miles"), (10, 1e9, "10 miles (clear)")]


def _rollup(cells: DataFrame, *keys) -> DataFrame:
    return (cells.groupBy(*keys).agg(
        F.sum("flights").alias("flights"), F.sum("cancelled").alias("cancelled"),
        # try_divide: a group of cancelled flights only has no delays to average (null, not an error)
        F.try_divide(F.sum("dep_delay_sum"), F.sum("dep_delay_n")).alias("avg_dep_delay"),
        F.try_divide(F.sum("arr_delay_sum"), F.sum("arr_delay_n")).alias("avg_arr_delay"),
        F.try_divide(100.0 * F.sum("delayed_15"), F.sum("dep_delay_n")).alias("pct_delayed_15")))


@dataclass
class Findings:
    cells: int
    flights: int
    carriers: pd.DataFrame
    origins: pd.DataFrame
    hours: pd.DataFrame
    worst_hours: pd.DataFrame
    visibility: pd.DataFrame
    rain: pd.DataFrame
    monthly: pd.DataFrame
    correlations: dict


def analyse(cells: DataFrame) -> Findings:
    cells = cells.cache()
    totals = cells.agg(F.count(F.lit(1)).alias("cells"), F.sum("flights").alias("flights")).first()
    local = F.from_utc_timestamp("hour_start", LOCAL_TZ)
    carriers = _rollup(cells, "carrier", "airline").orderBy(F.desc("avg_dep_delay")).toPandas()
    origins = _rollup(cells, "origin").orderBy(F.desc("avg_dep_delay")).toPandas()
    hours = _rollup(cells.withColumn("local_hour", F.hour(local)), "local_hour").orderBy("local_hour").toPandas()
    worst = (_rollup(cells, "hour_start", "origin").where("flights >= 5").orderBy(F.desc("avg_dep_delay"))
             .limit(10).join(cells.groupBy("hour_start", "origin").agg(
                 F.avg("visib").alias("visib"), F.avg("precip").alias("precip"),
                 F.avg("wind_speed").alias("wind_speed")), ["hour_start", "origin"])
             .withColumn("local_time", F.date_format(F.from_utc_timestamp("hour_start", LOCAL_TZ),
                                                     "yyyy-MM-dd HH:00"))
             .orderBy(F.desc("avg_dep_delay")).toPandas())
    bucket = F.lit(None)
    for lo, hi, label in reversed(VISIBILITY_BUCKETS):
        bucket = F.when((F.col("visib") >= lo) & (F.col("visib") < hi), label).otherwise(bucket)
    visibility = _rollup(cells.where(F.col("visib").isNotNull()).withColumn("visibility", bucket),
                         "visibility").toPandas()
    order = {label: i for i, (_, _, label) in enumerate(VISIBILITY_BUCKETS)}
    visibility = visibility.sort_values("visibility", key=lambda s: s.map(order)).reset_index(drop=True)
    rain = _rollup(cells.where(F.col("precip").isNotNull()).withColumn(
        "precipitation", F.when(F.col("precip") > 0, "rain or snow").otherwise("dry")), "precipitation"
    ).orderBy("precipitation").toPandas()
    monthly = _rollup(cells.withColumn("month", F.month(local)), "month", "origin").orderBy("month").toPandas()
    hourly = (_rollup(cells, "hour_start", "origin").join(
        cells.groupBy("hour_start", "origin").agg(F.avg("visib").alias("visib"), F.avg("precip").alias("precip"),
                                                  F.avg("wind_speed").alias("wind_speed")),
        ["hour_start", "origin"]).where("flights >= 3"))
    # A correlation is undefined (None) where a column does not vary; PySpark 4.2's corr() then
    # fails with DIVIDE_BY_ZERO under ANSI mode (4.3 returns null), so it is only asked where
    # both sides vary.
    factors = ("visib", "precip", "wind_speed")
    spread = hourly.agg(*[F.stddev_samp(c).alias(c) for c in ("avg_dep_delay",) + factors]).first()
    varying = [c for c in factors if spread[c] and spread["avg_dep_delay"]]
    found = hourly.agg(*[F.corr("avg_dep_delay", c).alias(c) for c in varying]).first() if varying else None
    corr = {c: (found[c] if c in varying else None) for c in factors}
    cells.unpersist()
    return Findings(cells=int(totals["cells"] or 0), flights=int(totals["flights"] or 0), carriers=carriers,
                    origins=origins, hours=hours, worst_hours=worst, visibility=visibility, rain=rain,
                    monthly=monthly, correlations={k: (None if v is None else float(v))
                                                   for k, v in corr.items()})


def _fmt(v, digits=1):
    if v is None or (isinstance(v, float) and pd.isna(v)):
        return "-"
    return f"{v:,.{digits}f}" if isinstance(v, float) else f"{v:,}"


def tables(f: Findings) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of every table, shared by the console and the HTML report."""
    out = [("Carriers, worst average departure delay first",
            ["carrier", "airline", "flights", "cancelled", "avg dep delay (min)", "% delayed > 15 min"],
            [[r.carrier, r.airline or "?", _fmt(int(r.flights)), _fmt(int(r.cancelled)),
              _fmt(r.avg_dep_delay), _fmt(r.pct_delayed_15)] for r in f.carriers.itertuples()]),
           ("Airports", ["origin", "flights", "avg dep delay (min)", "avg arr delay (min)", "% delayed > 15 min"],
            [[r.origin, _fmt(int(r.flights)), _fmt(r.avg_dep_delay), _fmt(r.avg_arr_delay),
              _fmt(r.pct_delayed_15)] for r in f.origins.itertuples()]),
           ("Worst hours (airport and hour, at least 5 flights)",
            ["local time", "origin", "flights", "avg dep delay (min)", "visibility (mi)", "precip (in)",
             "wind (mph)"],
            [[r.local_time, r.origin, _fmt(int(r.flights)), _fmt(r.avg_dep_delay), _fmt(r.visib),
              _fmt(r.precip, 2), _fmt(r.wind_speed)] for r in f.worst_hours.itertuples()]),
           ("Delay and weather", ["weather that hour", "flights", "avg dep delay (min)", "% delayed > 15 min"],
            [[r.visibility, _fmt(int(r.flights)), _fmt(r.avg_dep_delay), _fmt(r.pct_delayed_15)]
             for r in f.visibility.itertuples()]
            + [[r.precipitation, _fmt(int(r.flights)), _fmt(r.avg_dep_delay), _fmt(r.pct_delayed_15)]
               for r in f.rain.itertuples()])]
    return out


def correlation_line(f: Findings) -> str:
    c = f.correlations
    return ("correlation of an airport-hour's average departure delay with visibility "
            f"{_fmt(c.get('visib'), 2)}, precipitation {_fmt(c.get('precip'), 2)}, "
            f"wind speed {_fmt(c.get('wind_speed'), 2)}")


SCHEMA_HEADER = ["topic", "subject", "version", "id", "record", "fields"]


def _schema_row(sc: dict) -> list[str]:
    parsed = json.loads(sc["schema"])
    name = ".".join(p for p in (parsed.get("namespace"), parsed.get("name")) if p)
    return [sc["topic"], sc["subject"], str(sc["version"]), str(sc["id"]), name,
            str(len(parsed.get("fields", [])))]


def print_schemas(console, schemas: list[dict]) -> None:
    """The schemas of the values read and written (as pipeline.schemas returns them)."""
    from rich.table import Table
    t = Table(title="Avro schemas in the Schema Registry (topic name strategy: <topic>-value)",
              title_justify="left", header_style="bold")
    for h in SCHEMA_HEADER:
        t.add_column(h, justify="right" if h in ("version", "id", "fields") else "left")
    for sc in schemas:
        t.add_row(*_schema_row(sc))
    console.print(t)
    for sc in schemas:
        console.print(f"[bold]{sc['subject']}[/] version {sc['version']}, id {sc['id']}:")
        # as stored (Avro's canonical text), on one line: the terminal wraps it
        console.print(sc["schema"], markup=False, highlight=False, soft_wrap=True)


def print_tables(console, f: Findings) -> None:
    from rich.table import Table
    for title, header, rows in tables(f):
        t = Table(title=title, title_justify="left", header_style="bold")
        for i, h in enumerate(header):
            t.add_column(h, justify="left" if i < 2 else "right")
        for r in rows:
            t.add_row(*r)
        console.print(t)
    console.print(correlation_line(f))


def write_chart(f: Findings, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(2, 2, figsize=(13, 8.5))
    c = f.carriers.sort_values("avg_dep_delay")
    ax[0, 0].barh(c["carrier"], c["avg_dep_delay"], color="#c0504d")
    ax[0, 0].set_title("Average departure delay by carrier (min)")
    ax[0, 1].plot(f.hours["local_hour"], f.hours["avg_dep_delay"], marker="o", color="#1f77b4")
    ax[0, 1].set_title("Average departure delay by local hour of day (min)")
    ax[0, 1].set_xlabel("scheduled departure hour (New York time)")
    v = f.visibility
    ax[1, 0].bar(v["visibility"], v["avg_dep_delay"], color="#4f81bd")
    ax[1, 0].set_title("Average departure delay by visibility at the origin (min)")
    ax[1, 0].tick_params(axis="x", labelsize=8)
    for origin, g in f.monthly.groupby("origin"):
        ax[1, 1].plot(g["month"], g["avg_dep_delay"], marker="o", label=origin)
    ax[1, 1].set_title("Average departure delay by month and airport (min)")
    ax[1, 1].set_xlabel("month")
    ax[1, 1].legend()
    fig.suptitle(f"New York flights 2013: {f.flights:,} flights in {f.cells:,} hourly cells (via gregor)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write_html(f: Findings, path: Path, chart_name: str, run: dict) -> None:
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>gregor demo: NYC flight delays</title>",
             "<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto}"
             "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px}"
             "td:nth-child(n+3){text-align:right}</style></head><body>",
             "<h1>New York flight delays, 2013</h1>",
             f"<p>{run['flights_published']:,} flights published to topic <code>flights</code> as Avro, "
             "processed by a "
             f"Structured Streaming query in {run['micro_batches']} micro-batches into "
             f"{f.cells:,} hourly statistics on topic <code>flight-delays</code> (also in Parquet), "
             "all through gregor's Spark data source. The statistics were written exactly-once "
             "(each micro-batch in Kafka transactions committed by the driver, read back "
             f"read_committed): {run.get('duplicate_cells', 0)} duplicate cells.</p>",
             f"<img src='{html.escape(chart_name)}' alt='delay charts' style='max-width:100%'>"]
    schemas = run.get("schemas") or []
    if schemas:
        parts.append("<h2>Avro schemas</h2><p>Both topics hold Confluent-framed Avro (magic byte, "
                     "the schema's id, the Avro encoding), each value's schema registered under "
                     "<code>&lt;topic&gt;-value</code> in the Schema Registry at "
                     f"<code>{html.escape(str(run.get('schema_registry')))}</code>.</p><table><tr>"
                     + "".join(f"<th>{html.escape(h)}</th>" for h in SCHEMA_HEADER) + "</tr>")
        parts += ["<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in _schema_row(sc)) + "</tr>"
                  for sc in schemas]
        parts.append("</table>")
        for sc in schemas:
            parts.append(f"<h3>{html.escape(sc['subject'])} (version {sc['version']}, id {sc['id']})</h3>"
                         f"<pre>{html.escape(json.dumps(json.loads(sc['schema']), indent=2))}</pre>")
    for title, header, rows in tables(f):
        parts.append(f"<h2>{html.escape(title)}</h2><table><tr>"
                     + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr>")
        parts += ["<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows]
        parts.append("</table>")
    parts.append(f"<p>{html.escape(correlation_line(f))}.</p>")
    rest = {k: v for k, v in run.items() if k != "schemas"}
    parts.append(f"<p><small>Run: {html.escape(json.dumps(rest))}</small></p></body></html>")
    path.write_text("\n".join(parts), encoding="utf-8")
