"""Which quota applies: Kafka's eight levels, and which requests share one budget."""
from __future__ import annotations

from gregor.broker.entity_configs.names import DEFAULT
from gregor.broker.quotas.precedence import QuotaTable

LEVELS = [                      # most specific first (docs/design.html "Quotas")
    (("alice", "app"), 1.0),
    (("alice", DEFAULT), 2.0),
    (("alice", None), 3.0),
    ((DEFAULT, "app"), 4.0),
    ((DEFAULT, DEFAULT), 5.0),
    ((DEFAULT, None), 6.0),
    ((None, "app"), 7.0),
    ((None, DEFAULT), 8.0),
]


def limit(table, user, client):
    return table.limit(table.tags(user, client))


def test_each_level_wins_over_the_ones_after_it():
    for i in range(len(LEVELS)):
        table = QuotaTable()
        for (user, client), value in LEVELS[i:]:
            table.set(user, client, value)
        assert limit(table, "alice", "app") == LEVELS[i][1]


def test_removing_the_winner_falls_back_to_the_next_level():
    table = QuotaTable()
    for (user, client), value in LEVELS:
        table.set(user, client, value)
    for (user, client), value in LEVELS:
        assert limit(table, "alice", "app") == value
        table.set(user, client, None)
    assert limit(table, "alice", "app") is None and not table


def test_budgets_are_shared_by_what_resolves_to_the_same_entity():
    table = QuotaTable()
    table.set(None, "app", 10.0)                        # client-id level only
    assert table.tags("alice", "app") == table.tags("bob", "app") == ("", "app")
    table = QuotaTable()
    table.set("alice", None, 10.0)                      # user level only
    assert table.tags("alice", "app") == table.tags("alice", "other") == ("alice", "")
    assert limit(table, "bob", "app") is None
    table.set(DEFAULT, None, 5.0)                       # every other user: own budget of 5
    assert table.tags("bob", "x") == ("bob", "") and limit(table, "bob", "x") == 5.0
    table = QuotaTable()
    table.set(None, DEFAULT, 7.0)                       # <default> client: one budget each
    assert table.tags("u", "a") != table.tags("u", "b")
    assert limit(table, "u", "a") == limit(table, "u", "b") == 7.0


def test_mixed_levels_pick_tags_by_the_entity_that_applies():
    table = QuotaTable()
    table.set("alice", None, 100.0)
    table.set(None, DEFAULT, 7.0)
    assert table.tags("alice", "app") == ("alice", "")   # alice's user quota, all her clients
    assert table.tags("bob", "app") == ("", "app")       # the client default
    assert limit(table, "alice", "app") == 100.0 and limit(table, "bob", "app") == 7.0
    table.set("alice", "app", 1.0)
    assert table.tags("alice", "app") == ("alice", "app")
    assert limit(table, "alice", "app") == 1.0
