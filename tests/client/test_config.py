"""Client config parsing: both spellings, types, defaults, errors that name keys."""
from __future__ import annotations

import pytest

from gregor.client.config import (COMMON_OPTIONS, ConfigError, bootstrap_list, parse_config)
from gregor.client.producer.settings import producer_config


def test_dotted_and_keyword_spellings_merge():
    cfg = parse_config(COMMON_OPTIONS, {"bootstrap.servers": "h:1"},
                       {"request_timeout_ms": "500"})
    assert cfg["request.timeout.ms"] == 500          # converted from str
    assert cfg["bootstrap.servers"] == ["h:1"]
    assert cfg["reconnect.backoff.ms"] == 50          # Kafka's default
    assert "request.timeout.ms" in cfg["_explicit"]


def test_unknown_key_names_it_and_suggests():
    with pytest.raises(ConfigError, match="'lingr.ms'.*linger.ms"):
        producer_config({"bootstrap.servers": "h:1", "lingr.ms": 5})


def test_same_key_twice_with_different_values_is_an_error():
    with pytest.raises(ConfigError, match="'linger.ms' and 'linger_ms'"):
        producer_config({"linger.ms": 1}, {"linger_ms": 2})


def test_bad_type_names_key():
    with pytest.raises(ConfigError, match="'batch.size'"):
        producer_config({"batch.size": "lots"})
    with pytest.raises(ConfigError, match="'enable.idempotence'"):
        producer_config({"enable.idempotence": "maybe"})
    with pytest.raises(ConfigError, match="'compression.type'"):
        producer_config({"compression.type": "brotli"})


def test_producer_defaults_are_javas():
    cfg = producer_config({"bootstrap.servers": "h:1"})
    assert cfg["acks"] == -1 and cfg["enable.idempotence"] is True
    assert cfg["linger.ms"] == 5 and cfg["batch.size"] == 16384
    assert cfg["buffer.memory"] == 32 * 1024 * 1024 and cfg["max.block.ms"] == 60000
    assert cfg["max.request.size"] == 1024 * 1024 and cfg["delivery.timeout.ms"] == 120000
    assert cfg["request.timeout.ms"] == 30000
    assert cfg["max.in.flight.requests.per.connection"] == 5


@pytest.mark.parametrize("acks,expected", [("all", -1), ("-1", -1), (1, 1), ("0", 0)])
def test_acks_spellings(acks, expected):
    assert producer_config({"acks": acks, "enable.idempotence": False})["acks"] == expected


def test_explicit_idempotence_conflicting_with_acks_names_both():
    with pytest.raises(ConfigError, match="enable.idempotence.*'acks'"):
        producer_config({"acks": 1, "enable.idempotence": True})
    with pytest.raises(ConfigError, match="max.in.flight"):
        producer_config({"max.in.flight.requests.per.connection": 6,
                         "enable.idempotence": "true"})


def test_implicit_idempotence_turns_off_quietly():
    assert producer_config({"acks": 1})["enable.idempotence"] is False
    assert producer_config({"acks": "all"})["enable.idempotence"] is True


def test_delivery_timeout_floor():
    with pytest.raises(ConfigError, match="delivery.timeout.ms.*linger.ms.*request.timeout.ms"):
        producer_config({"delivery.timeout.ms": 1000, "request.timeout.ms": 2000})
    # Not given explicitly: raised to the floor, as Kafka does.
    assert producer_config({"request.timeout.ms": 200000})["delivery.timeout.ms"] == 200005


def test_transactional_id_needs_idempotence_and_its_settings():
    assert producer_config({"transactional.id": "tx-1"})["enable.idempotence"] is True
    with pytest.raises(ConfigError, match="transactional.id.*acks"):
        producer_config({"transactional.id": "tx-1", "acks": 1})
    with pytest.raises(ConfigError, match="enable.idempotence"):
        producer_config({"transactional.id": "tx-1", "enable.idempotence": False})
    with pytest.raises(ConfigError, match="empty"):
        producer_config({"transactional.id": ""})


def test_bootstrap_list_forms():
    assert bootstrap_list({"bootstrap.servers": "a:1, b:2"}) == [("a", 1), ("b", 2)]
    assert bootstrap_list({"bootstrap.servers": ["PLAINTEXT://c:3"]}) == [("c", 3)]
    assert bootstrap_list({"bootstrap.servers": "d"}) == [("d", 9092)]
    with pytest.raises(ConfigError, match="bootstrap.servers"):
        bootstrap_list({"bootstrap.servers": None})
    with pytest.raises(ConfigError, match="bad port"):
        bootstrap_list({"bootstrap.servers": "e:xx"})
