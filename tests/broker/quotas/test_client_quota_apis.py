"""DescribeClientQuotas and AlterClientQuotas with Kafka's rules (ClientQuotasRequestTest,
ClientQuotaControlManager), through the wire codecs at both versions."""
from __future__ import annotations

import pytest

from gregor.protocol.errors import ErrorCode
from tests.broker.handler_harness import call, run_broker


def _entity(**names):
    kinds = {"user": "user", "client_id": "client-id", "ip": "ip"}
    return [{"entity_type": kinds[k], "entity_name": v} for k, v in names.items()]


async def alter(b, entries, validate_only=False, version=1):
    resp = await call(b, "AlterClientQuotas", version, {
        "entries": [{"entity": ent, "ops": [
            {"key": k, "value": 0.0 if v is None else v, "remove": v is None}
            for k, v in ops.items()]} for ent, ops in entries],
        "validate_only": validate_only})
    return [(e["error_code"], e["error_message"]) for e in resp["entries"]]


async def describe(b, components, strict=False, version=1):
    resp = await call(b, "DescribeClientQuotas", version,
                      {"components": components, "strict": strict})
    if resp["error_code"]:
        return resp["error_code"], resp["error_message"]
    return {tuple((e["entity_type"], e["entity_name"]) for e in entry["entity"]):
            {v["key"]: v["value"] for v in entry["values"]} for entry in resp["entries"]}


def exact(kind, name):
    return {"entity_type": kind, "match_type": 0, "match": name}


def default(kind):
    return {"entity_type": kind, "match_type": 1, "match": None}


def any_name(kind):
    return {"entity_type": kind, "match_type": 2, "match": None}


@pytest.mark.parametrize("version", [0, 1])
def test_alter_then_describe_and_validate_only(tmp_path, version):
    async def scenario(b):
        assert await alter(b, [(_entity(user="alice"), {"producer_byte_rate": 1048576.0,
                                                        "request_percentage": 12.5})],
                           version=version) == [(0, None)]
        assert await alter(b, [(_entity(user="alice"), {"consumer_byte_rate": 5.0})],
                           validate_only=True, version=version) == [(0, None)]
        got = await describe(b, [exact("user", "alice")], strict=True, version=version)
        assert got == {(("user", "alice"),): {"producer_byte_rate": 1048576.0,
                                              "request_percentage": 12.5}}
        # stored as Kafka's ZooKeeper mode writes them
        assert b.entity_configs.get("users/alice") == {"producer_byte_rate": "1048576",
                                                       "request_percentage": "12.5"}
        assert await alter(b, [(_entity(user="alice"), {"request_percentage": None})],
                           version=version) == [(0, None)]
        got = await describe(b, [exact("user", "alice")], strict=True, version=version)
        assert got == {(("user", "alice"),): {"producer_byte_rate": 1048576.0}}
    run_broker(tmp_path, scenario)


def test_invalid_alterations_get_kafkas_errors(tmp_path):
    bad = ErrorCode.INVALID_REQUEST

    async def scenario(b):
        cases = [
            (_entity(user=""), {"request_percentage": 12.34}, "Empty user not supported"),
            (_entity(client_id=""), {"request_percentage": 12.34},
             "Empty client-id not supported"),
            ([{"entity_type": "", "entity_name": "x"}], {"request_percentage": 1.0},
             "Unhandled client quota entity type: "),
            ([{"entity_type": "other", "entity_name": "x"}], {"request_percentage": 1.0},
             "Unhandled client quota entity type: other"),
            ([], {"producer_byte_rate": 10000.0}, "Invalid empty client quota entity"),
            (_entity(user="u"), {"bad": 1.0}, "Invalid configuration key bad"),
            (_entity(user="u"), {"producer_byte_rate": 10000.5},
             "producer_byte_rate cannot be a fractional value."),
            (_entity(user="u"), {"producer_byte_rate": -1.0},
             "Quota producer_byte_rate must be greater than 0"),
            (_entity(user="u"), {"request_percentage": 0.0},
             "Quota request_percentage must be greater than 0"),
            (_entity(user="u"), {"consumer_byte_rate": 2.0 ** 64},
             "Proposed value for consumer_byte_rate is too large for a LONG."),
            (_entity(user="u"), {"connection_creation_rate": 5.0},
             "Invalid configuration key connection_creation_rate"),
            (_entity(ip="1.2.3.4"), {"producer_byte_rate": 5.0},
             "Invalid configuration key producer_byte_rate"),
            (_entity(ip="1.2.3.4"), {"connection_creation_rate": 2.5},
             "connection_creation_rate cannot be a fractional value."),
            (_entity(user="user", ip="1.2.3.4"), {"request_percentage": 12.34},
             "Invalid quota entity combination"),
            (_entity(client_id="client", ip="1.2.3.4"), {"request_percentage": 12.34},
             "Invalid quota entity combination"),
            (_entity(ip="not a valid host because it has spaces"),
             {"connection_creation_rate": 50.0}, "not a valid IP"),
            (_entity(ip="RFC2606.invalid"), {"connection_creation_rate": 50.0},
             "not a valid IP"),
            (_entity(user="u") + _entity(user="v"), {"producer_byte_rate": 1.0},
             "duplicate entity entry user"),
        ]
        results = await alter(b, [(ent, ops) for ent, ops, _ in cases], validate_only=False)
        for (code, message), (_, _, expected) in zip(results, cases):
            assert code == bad, (expected, code, message)
            assert expected in message, (expected, message)
        assert b.entity_configs.entities() == {}        # nothing half-written
        # one bad entry does not stop the good ones; removing a key nobody set is fine
        results = await alter(b, [(_entity(user="u"), {"bad": 1.0}),
                                  (_entity(client_id="c"), {"consumer_byte_rate": 7.0}),
                                  (_entity(user="u"), {"producer_byte_rate": None,
                                                       "SCRAM-SHA-256": None})])
        assert [r[0] for r in results] == [bad, 0, 0]
        assert b.entity_configs.entities() == {"clients/c": {"consumer_byte_rate": "7"}}
    run_broker(tmp_path, scenario)


def test_quota_changes_never_touch_a_users_credentials(tmp_path):
    cred = "salt=c2FsdA==,stored_key=a2V5,server_key=c2tleQ==,iterations=4096"

    async def scenario(b):
        await b.entity_configs.alter("users/alice", {"SCRAM-SHA-256": cred})
        assert await alter(b, [(_entity(user="alice"), {"producer_byte_rate": 10.0})]) == \
            [(0, None)]
        assert await alter(b, [(_entity(user="alice"), {"SCRAM-SHA-256": None})]) == [(0, None)]
        assert b.entity_configs.get("users/alice") == {"SCRAM-SHA-256": cred,
                                                       "producer_byte_rate": "10"}
        # describe shows quota keys only
        assert await describe(b, [exact("user", "alice")]) == \
            {(("user", "alice"),): {"producer_byte_rate": 10.0}}
    run_broker(tmp_path, scenario)


def test_describe_filters_as_kafka(tmp_path):
    """ClientQuotasRequestTest.testDescribeClientQuotasMatchExact/MatchPartial's entities."""
    entities = {
        (("user", "user-1"),): 1.0,
        (("user", "user-2"),): 2.0,
        (("user", None),): 3.0,
        (("client-id", "client-1"),): 4.0,
        (("client-id", None),): 5.0,
        (("user", "user-1"), ("client-id", "client-1")): 6.0,
        (("user", "user-1"), ("client-id", None)): 7.0,
        (("user", None), ("client-id", "client-1")): 8.0,
        (("user", None), ("client-id", None)): 9.0,
        (("user", "user with spaces"),): 10.0,
    }

    async def scenario(b):
        await alter(b, [([{"entity_type": k, "entity_name": n} for k, n in ent],
                         {"request_percentage": v}) for ent, v in entities.items()])
        await alter(b, [(_entity(ip="1.2.3.4"), {"connection_creation_rate": 9.0}),
                        (_entity(ip=None), {"connection_creation_rate": 3.0})])

        async def matched(components, strict=False):
            got = await describe(b, components, strict)
            assert not isinstance(got, tuple), got
            return {ent for ent in got if not any(k == "ip" for k, _ in ent)}, \
                {ent for ent in got if any(k == "ip" for k, _ in ent)}

        def having(pred):
            return {e for e in entities if pred(dict(e))}

        # exact matches, strict and not
        for ent in entities:
            comps = [exact(k, n) if n is not None else default(k) for k, n in ent]
            users, ips = await matched(comps, strict=True)
            assert users == {ent} and not ips
        users, ips = await matched([exact("user", "user-1")])
        assert users == having(lambda e: e.get("user") == "user-1")
        users, _ = await matched([exact("user", "user-1")], strict=True)
        assert users == {(("user", "user-1"),)}
        users, _ = await matched([default("client-id")])
        assert users == having(lambda e: "client-id" in e and e["client-id"] is None)
        users, ips = await matched([any_name("user")], strict=True)
        assert users == having(lambda e: set(e) == {"user"}) and not ips
        users, ips = await matched([any_name("user"), any_name("client-id")], strict=True)
        assert users == having(lambda e: set(e) == {"user", "client-id"})
        users, ips = await matched([], strict=False)
        assert users == set(entities) and len(ips) == 2
        users, ips = await matched([], strict=True)
        assert not users and not ips
        users, ips = await matched([exact("ip", "1.2.3.4")])
        assert not users and ips == {(("ip", "1.2.3.4"),)}
        users, ips = await matched([any_name("ip")])
        assert not users and len(ips) == 2
        assert await describe(b, [exact("user", "nobody")]) == {}
    run_broker(tmp_path, scenario)


def test_bad_filters_fail_the_whole_request(tmp_path):
    async def scenario(b):
        code, message = await describe(b, [exact("ip", "1.2.3.4"), exact("user", "u")])
        assert code == ErrorCode.INVALID_REQUEST
        assert "Invalid entity filter component combination" in message
        code, message = await describe(b, [any_name("client-id"), any_name("ip")])
        assert code == ErrorCode.INVALID_REQUEST
        code, message = await describe(b, [exact("other", "name")])
        assert code == ErrorCode.UNSUPPORTED_VERSION
        assert "Custom entity type 'other' not supported" in message
        code, message = await describe(b, [exact("user", "a"), exact("user", "b")])
        assert code == ErrorCode.INVALID_REQUEST and "Duplicate user filter" in message
        code, message = await describe(b, [{"entity_type": "", "match_type": 0, "match": "x"}])
        assert code == ErrorCode.INVALID_REQUEST
        code, _ = await describe(b, [{"entity_type": "user", "match_type": 7, "match": None}])
        assert code == ErrorCode.INVALID_REQUEST
    run_broker(tmp_path, scenario)
