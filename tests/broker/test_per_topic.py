"""The per-topic result loop shared by CreateTopics and CreatePartitions."""
import pytest

from gregor.broker.apis.per_topic import per_topic_results
from gregor.protocol.errors import ErrorCode, InvalidPartitionsError


class _Metrics:
    def __init__(self):
        self.errors = []

    def error(self, api_key, name):
        self.errors.append((api_key, name))


class _Broker:
    def __init__(self):
        self.metrics = _Metrics()


def test_results_follow_request_order_and_fail_one_by_one():
    broker, applied = _Broker(), []

    def apply(t):
        if t["name"] == "bad":
            raise InvalidPartitionsError("no partitions")
        applied.append(t["name"])
    res = per_topic_results(broker, 37, [{"name": "a"}, {"name": "bad"}, {"name": "b"}], apply)
    assert [(r["name"], r["error_code"]) for r in res] == [
        ("a", ErrorCode.NONE), ("bad", ErrorCode.INVALID_PARTITIONS), ("b", ErrorCode.NONE)]
    assert res[1]["error_message"] == "no partitions" and res[0]["error_message"] is None
    assert applied == ["a", "b"]
    assert broker.metrics.errors == [(37, "INVALID_PARTITIONS")]


def test_a_name_listed_twice_fails_every_entry_without_applying():
    broker, applied = _Broker(), []
    res = per_topic_results(broker, 19, [{"name": "d"}, {"name": "x"}, {"name": "d"}],
                            lambda t: applied.append(t["name"]))
    assert [r["error_code"] for r in res] == [ErrorCode.INVALID_REQUEST, ErrorCode.NONE,
                                              ErrorCode.INVALID_REQUEST]
    assert "more than once" in res[0]["error_message"]
    assert applied == ["x"] and broker.metrics.errors == []


def test_errors_that_are_not_kafka_errors_propagate():
    def apply(t):
        raise RuntimeError("bug")
    with pytest.raises(RuntimeError):
        per_topic_results(_Broker(), 19, [{"name": "a"}], apply)
