"""A read's mistakes fail at load(), saying what is wrong: a topic that does not exist (by
name), no broker at kafka.bootstrap.servers (the address and "connection refused")."""
from __future__ import annotations

import socket
import time

import pytest


def _refused_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_a_missing_topic_fails_at_load_with_its_name(spark, bootstrap):
    missing = f"missing-{time.monotonic_ns()}"
    def reader():  # a DataFrameReader keeps the options set on it: a fresh one each time
        return (spark.read.format("gregor").option("kafka.bootstrap.servers", bootstrap)
                .option("fetchOffset.retryIntervalMs", "10"))
    with pytest.raises(Exception, match=f"no partitions found for {missing}"):
        reader().option("subscribe", missing).load()          # no action: load() alone
    with pytest.raises(Exception, match=f"no partitions found for {missing}.*does not exist"):
        reader().option("assign", f'{{"{missing}": [0]}}').load()


def test_no_broker_fails_at_load_naming_the_address(spark):
    port = _refused_port()
    with pytest.raises(Exception, match=rf"could not connect to 127\.0\.0\.1:{port} "
                                        r"\(connection refused\)"):
        (spark.read.format("gregor").option("kafka.bootstrap.servers", f"127.0.0.1:{port}")
         .option("kafka.gregor.bootstrap.timeout.ms", "300").option("subscribe", "t").load())
