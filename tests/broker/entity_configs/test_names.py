"""Entity names and paths: Kafka's Sanitizer, byte for byte, and the config paths."""
from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from gregor.broker.entity_configs.names import (DEFAULT, EntityPath, desanitize, sanitize,
                                                stored_name)


@pytest.mark.parametrize("name,expected", [
    ("alice", "alice"),
    ("user with spaces", "user%20with%20spaces"),          # Kafka: '+' becomes %20
    ("a*b", "a%2Ab"),                                     # '*' is a JMX pattern char
    ("CN=alice,O=acme", "CN%3Dalice%2CO%3Dacme"),
    ("a.b-c_d", "a.b-c_d"),                               # URLEncoder keeps .-_
    ("tilde~", "tilde%7E"),                               # ... but not '~' (Python does)
    ("ünï", "%C3%BCn%C3%AF"),                             # UTF-8 bytes
    ("a/b", "a%2Fb"),                                     # cannot break a path
])
def test_sanitize_is_kafkas(name, expected):
    assert sanitize(name) == expected
    assert desanitize(expected) == name


def test_desanitize_reads_what_kafkas_url_encoder_may_write():
    assert desanitize("user+1") == "user 1"


@given(st.text(min_size=1, max_size=40))
def test_sanitize_round_trips(name):
    assert desanitize(sanitize(name)) == name
    assert "/" not in sanitize(name)


def test_paths():
    p = EntityPath.parse("users/alice/clients/<default>")
    assert (p.type, p.name, p.client) == ("users", "alice", DEFAULT)
    assert str(p) == "users/alice/clients/<default>"
    assert p.components() == {"user": "alice", "client-id": None}
    assert EntityPath.parse("clients/app%201").components() == {"client-id": "app 1"}
    assert EntityPath.parse("ips/<default>").components() == {"ip": None}
    assert str(EntityPath.of(user="a b", client=None)) == "users/a%20b/clients/<default>"
    assert str(EntityPath.of(ip="10.0.0.1")) == "ips/10.0.0.1"
    assert stored_name(None) == DEFAULT
    for bad in ("topics/x", "users", "users/a/clients", "clients/a/clients/b", "ips/a/b", ""):
        with pytest.raises(ValueError):
            EntityPath.parse(bad)
