"""Each client library's errors: only refusals before the append fail an op; anything that
may have been written is info (as Jepsen classifies them)."""
from __future__ import annotations

import pytest

from gregor.testing.history.workloads import client_class

MAYBE_WRITTEN = ["NOT_ENOUGH_REPLICAS_AFTER_APPEND", "NOT_LEADER_OR_FOLLOWER",
                 "REQUEST_TIMED_OUT", "UNKNOWN_SERVER_ERROR"]


def _confluent(name):
    import confluent_kafka as ck
    code = getattr(ck.KafkaError, name, None)
    if code is None:
        code = getattr(ck.KafkaError, {"NOT_LEADER_OR_FOLLOWER": "NOT_LEADER_FOR_PARTITION",
                                       "UNKNOWN_SERVER_ERROR": "UNKNOWN"}[name])
    return ck.KafkaException(ck.KafkaError(code))


def _code(name):
    from gregor.protocol.errors import ErrorCode
    return int(ErrorCode[name]) if name != "UNKNOWN_SERVER_ERROR" else -1


def _kafka_python(name):
    import kafka.errors as ke
    return ke.for_code(_code(name))()


def _aiokafka(name):
    import aiokafka.errors as ae
    return ae.for_code(_code(name))()


def _gregor(name):
    from gregor.protocol import errors
    return errors.error_class(_code(name))() if hasattr(errors, "error_class") else \
        next(c for c in vars(errors).values() if isinstance(c, type)
             and issubclass(c, errors.KafkaError) and c.code == _code(name))()


MAKERS = {"confluent-kafka": _confluent, "kafka-python": _kafka_python,
          "aiokafka": _aiokafka, "gregor": _gregor}


@pytest.fixture(params=sorted(MAKERS))
def lib(request):
    return request.param, client_class(request.param)("127.0.0.1:1", {}), MAKERS[request.param]


def test_refused_outright_is_a_failure(lib):
    _, client, make = lib
    kind, name = client.classify(make("TOPIC_AUTHORIZATION_FAILED"))
    assert (kind, name) == ("fail", "TOPIC_AUTHORIZATION_FAILED")


def test_not_enough_replicas_is_indeterminate(lib):
    # min ISR is checked before duplicates: a retry of a batch already appended gets it
    _, client, make = lib
    assert client.classify(make("NOT_ENOUGH_REPLICAS"))[0] == "info"


@pytest.mark.parametrize("error", MAYBE_WRITTEN)
def test_maybe_written_is_indeterminate(lib, error):
    _, client, make = lib
    kind, _ = client.classify(make(error))
    assert kind == "info"


def test_client_side_timeouts_are_indeterminate_and_bugs_are_not_client_errors(lib):
    _, client, _ = lib
    assert client.classify(TimeoutError())[0] == "info"
    assert client.classify(ZeroDivisionError()) is None
