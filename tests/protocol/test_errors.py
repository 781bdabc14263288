"""Kafka error codes: names, retriable flags, exception classes, unknown codes."""
from __future__ import annotations

import re

import pytest

from gregor.protocol import errors
from gregor.protocol.errors import ErrorCode, KafkaError, error_for_code


def test_every_code_from_minus_one_to_128_is_known():
    codes = [cls.code for cls in errors.ALL_ERRORS]
    assert codes[:130] == list(range(-1, 129))
    assert 133 in codes                            # SHARE_SESSION_LIMIT_REACHED (KIP-932)
    assert {e.value for e in ErrorCode} == set(codes)


def test_error_code_enum():
    assert ErrorCode.NONE == 0
    assert ErrorCode.UNKNOWN_SERVER_ERROR == -1
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER == 6
    assert ErrorCode.UNSUPPORTED_VERSION == 35
    assert ErrorCode.TRANSACTION_ABORTABLE == 120
    assert ErrorCode(45).name == "OUT_OF_ORDER_SEQUENCE_NUMBER"


@pytest.mark.parametrize("cls", errors.ALL_ERRORS, ids=lambda c: c.name)
def test_each_class_is_complete(cls):
    assert issubclass(cls, KafkaError)
    assert re.fullmatch(r"[A-Z][A-Z0-9_]*", cls.name)
    assert ErrorCode[cls.name] == cls.code
    assert isinstance(cls.retriable, bool)
    assert cls.message and cls.message.endswith(".")
    assert cls.__name__.endswith("Error")
    assert getattr(errors, cls.__name__) is cls
    assert type(error_for_code(cls.code)) is cls


def test_names_the_other_layers_use():
    for name, code in [
        ("OutOfOrderSequenceNumberError", 45), ("InvalidProducerEpochError", 47),
        ("UnknownProducerIdError", 59), ("CorruptMessageError", 2), ("MessageTooLargeError", 10),
        ("InvalidRecordError", 87), ("NotEnoughReplicasError", 19),
        ("NotEnoughReplicasAfterAppendError", 20), ("RequestTimedOutError", 7),
        ("UnknownTopicOrPartitionError", 3), ("OffsetOutOfRangeError", 1),
        ("InvalidTimestampError", 32), ("RecordListTooLargeError", 18),
        ("DuplicateSequenceNumberError", 46), ("TopicAlreadyExistsError", 36),
        ("InvalidReplicationFactorError", 38), ("InvalidPartitionsError", 37),
        ("InvalidRequiredAcksError", 21), ("UnsupportedVersionError", 35),
        ("PolicyViolationError", 44), ("InvalidConfigurationError", 40),
        ("NotLeaderOrFollowerError", 6), ("LeaderNotAvailableError", 5),
        ("KafkaStorageError", 56), ("InvalidTopicError", 17), ("UnknownServerError", -1),
    ]:
        assert getattr(errors, name).code == code, name


@pytest.mark.parametrize("code, retriable", [
    (-1, False), (1, False), (2, True), (3, True), (5, True), (6, True), (7, True), (8, False),
    (10, False), (13, True), (14, True), (15, True), (16, True), (19, True), (20, True),
    (22, False), (25, False), (27, False), (35, False), (41, True), (45, False), (47, False),
    (51, True), (56, True), (59, False), (74, True), (75, True), (78, True), (88, True),
    (89, True), (90, False), (100, True), (103, True), (120, False),
])
def test_retriable_flags(code, retriable):
    assert error_for_code(code).retriable is retriable
    assert errors.is_retriable(code) is retriable


def test_message_and_str():
    e = error_for_code(3, "topic 'x' does not exist and auto.create.topics.enable is false")
    assert isinstance(e, errors.UnknownTopicOrPartitionError)
    assert e.message.startswith("topic 'x'")
    assert str(e).startswith("UNKNOWN_TOPIC_OR_PARTITION (3): topic 'x'")
    plain = errors.MessageTooLargeError()
    assert plain.message == errors.MessageTooLargeError.message
    with pytest.raises(KafkaError):
        raise plain


def test_unknown_codes_stay_useful():
    e = error_for_code(4242)
    assert isinstance(e, errors.UnknownServerError)
    assert e.code == 4242 and "4242" in str(e) and e.retriable is False
    assert errors.UnknownServerError.code == -1  # the class itself is untouched
    assert errors.error_class(4242) is None
    assert errors.is_retriable(4242) is False


def test_raise_for_code():
    errors.raise_for_code(0)
    with pytest.raises(errors.NotCoordinatorError):
        errors.raise_for_code(16)


def test_aliases_for_older_names():
    assert errors.NotLeaderForPartitionError is errors.NotLeaderOrFollowerError
    assert errors.InvalidConfigError is errors.InvalidConfigurationError
