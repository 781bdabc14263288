"""Auto-registration hook: PySpark looks for a top-level module named pyspark_<format> exposing
DefaultSource, so `spark.read.format("gregor")` works once gregor is installed."""
from gregor.spark.source import GregorDataSource as DefaultSource  # noqa: F401
