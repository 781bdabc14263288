"""format("gregor") is found the way Spark looks for Python data sources: a top-level module
named pyspark_<name> with a DefaultSource class (and explicitly through register())."""
import importlib

import pytest

pytestmark = pytest.mark.spark


def test_pyspark_gregor_exposes_the_data_source():
    from pyspark.sql.datasource import DataSource
    mod = importlib.import_module("pyspark_gregor")
    assert issubclass(mod.DefaultSource, DataSource)
    assert mod.DefaultSource.name() == "gregor"


def test_register_makes_the_format_known(spark):
    from gregor.spark import register
    register(spark)
    assert spark._jsparkSession.sessionState().dataSourceManager().dataSourceExists("gregor")
