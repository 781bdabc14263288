"""Java's sasl.jaas.config strings: parsed as Java's JaasConfig does, secrets never shown."""
from __future__ import annotations

import pytest

from gregor.security.jaas import (JaasError, client_credentials, parse_jaas_config,
                                  plain_users, single_entry)


def test_plain_server_config_with_users():
    text = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
            'username="admin" password="admin-secret" user_admin="admin-secret" '
            'user_alice="alice-secret";')
    assert plain_users(text) == {"admin": "admin-secret", "alice": "alice-secret"}
    assert client_credentials(text) == ("admin", "admin-secret")


def test_quoting_escapes_comments_and_bare_words():
    text = ('/* a comment */ org.apache.kafka.common.security.scram.ScramLoginModule Required\n'
            '  username=bob // trailing comment\n'
            '  password="p\\"w;=x" ;')
    entry = single_entry(text)
    assert entry.flag == "required"
    assert entry.options == {"username": "bob", "password": 'p"w;=x'}


def test_repr_never_shows_values():
    entry = single_entry('M required username="u" password="hunter2";')
    assert "hunter2" not in repr(entry) and "hunter2" not in str(entry)


@pytest.mark.parametrize("text", [
    "", "org.Module", "org.Module required", 'org.Module required username="x"',
    'org.Module sometimes username="x";', 'org.Module required username=;',
    'org.Module required "x"="y";', 'org.Module required username="unclosed;',
    "/* unclosed comment",
])
def test_malformed_configs_are_refused_without_quoting_values(text):
    with pytest.raises(JaasError) as e:
        parse_jaas_config(text)
    assert "unclosed;" not in str(e.value)


def test_two_modules_where_one_is_expected():
    text = 'A required x="1"; B optional y="2";'
    assert len(parse_jaas_config(text)) == 2
    with pytest.raises(JaasError, match="one login module"):
        single_entry(text)
