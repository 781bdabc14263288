import pytest

from gregor.broker.config import BrokerConfig, ConfigError
from gregor.broker.listeners import (Listener, ListenerConfig, parse_listeners,
                                     parse_protocol_map, with_first_listener_at)


def config(**values) -> ListenerConfig:
    return ListenerConfig.from_config(BrokerConfig({k.replace("_", "."): v
                                                    for k, v in values.items()}))


def test_parse_listeners_names_and_bare_addresses():
    assert parse_listeners("PLAINTEXT://127.0.0.1:0") == [Listener("PLAINTEXT", "127.0.0.1", 0)]
    assert parse_listeners("localhost:9092") == [Listener("PLAINTEXT", "localhost", 9092)]
    assert parse_listeners("client://a:1, repl://[::1]:2") == [
        Listener("CLIENT", "a", 1), Listener("REPL", "::1", 2)]
    assert Listener("REPL", "::1", 2).url == "REPL://[::1]:2"


@pytest.mark.parametrize("spec", ["nohostport", "A://h:x", "A://h:70000", "",
                                  "A://h:1,A://h:2"])
def test_parse_listeners_refuses_bad_specs(spec):
    with pytest.raises(ConfigError):
        parse_listeners(spec)


def test_protocol_map_defaults_to_kafkas():
    assert parse_protocol_map(None)["PLAINTEXT"] == "PLAINTEXT"
    assert parse_protocol_map("repl:plaintext") == {"REPL": "PLAINTEXT"}
    with pytest.raises(ConfigError):
        parse_protocol_map("nocolon")


def test_default_is_one_plaintext_listener_used_between_brokers():
    cfg = config()
    assert [lst.name for lst in cfg.listeners] == ["PLAINTEXT"]
    assert cfg.inter_broker == "PLAINTEXT"


def test_named_listeners_with_an_inter_broker_listener():
    cfg = config(listeners="PLAINTEXT://127.0.0.1:0,REPLICATION://127.0.0.1:0",
                 listener_security_protocol_map="PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT",
                 advertised_listeners="PLAINTEXT://h:9092,REPLICATION://127.0.0.1:0",
                 inter_broker_listener_name="replication")
    assert cfg.inter_broker == "REPLICATION"
    bound = {"PLAINTEXT": ("127.0.0.1", 4000), "REPLICATION": ("127.0.0.1", 4001)}
    assert cfg.advertise(bound, "me") == (Listener("PLAINTEXT", "h", 9092),
                                          Listener("REPLICATION", "127.0.0.1", 4001))


def test_wildcard_host_is_advertised_as_the_hostname():
    cfg = config(listeners="PLAINTEXT://0.0.0.0:0")
    assert cfg.advertise({"PLAINTEXT": ("0.0.0.0", 5)}, "box") == (
        Listener("PLAINTEXT", "box", 5),)


@pytest.mark.parametrize("values, message", [
    ({"listeners": "X://h:1", "listener.security.protocol.map": "X:SASL_GSS"},
     "the security protocols are"),
    ({"listeners": "REPL://h:1"}, "no entry"),
    ({"listeners": "PLAINTEXT://h:1", "advertised.listeners": "OTHER://h:1"}, "not in"),
    ({"listeners": "PLAINTEXT://h:1", "inter.broker.listener.name": "REPL"},
     "inter.broker.listener.name"),
    ({"listeners": "REPL://h:1", "listener.security.protocol.map": "REPL:PLAINTEXT"},
     "inter.broker.listener.name"),
])
def test_inconsistent_listener_settings_are_refused(values, message):
    with pytest.raises(ConfigError, match=message):
        ListenerConfig.from_config(BrokerConfig(values))


def test_listen_option_moves_only_the_first_listener():
    assert with_first_listener_at("PLAINTEXT://127.0.0.1:9092", "0.0.0.0:1") == \
        "PLAINTEXT://0.0.0.0:1"
    assert with_first_listener_at("A://h:1,B://h:2", "x:3") == "A://x:3,B://h:2"
