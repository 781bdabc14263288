"""hold, delay, drop, intercept and limit_versions, seen on the wire; bad input fails at once."""
from __future__ import annotations

import asyncio
import select

import pytest

from gregor.testing import CLOSE, DROP, PASS, Broker
from gregor.testing.wire import ConnectionClosed, WireClient

METADATA_ALL = {"topics": None}


@pytest.fixture(scope="module")
def broker():
    with Broker() as b:
        yield b


@pytest.fixture(autouse=True)
def clean(broker):
    broker.faults.clear()
    yield
    broker.faults.clear()


def answered(client: WireClient, wait: float = 0.3) -> bool:
    """Whether a response (or a close) is waiting on the client's socket."""
    return bool(select.select([client.sock], [], [], wait)[0])


def test_hold_releases_in_arrival_order_one_by_one(broker):
    with WireClient(broker.port) as a, WireClient(broker.port) as b:
        with broker.hold("Metadata") as gate:
            a.send("Metadata", 1, METADATA_ALL, client_id="first")
            gate.wait_arrived(1)
            b.send("Metadata", 1, METADATA_ALL, client_id="second")
            gate.wait_arrived(2)
            assert gate.held == 2 and not answered(a) and not answered(b)
            assert gate.release(1) == 1
            a.receive("Metadata", 1)
            assert gate.held == 1 and not answered(b)
        b.receive("Metadata", 1)              # leaving the block released the rest
    assert [r.client_id for r in broker.requests("Metadata")][-2:] == ["first", "second"]


def test_requests_behind_a_held_one_wait_on_the_same_connection(broker):
    # as Kafka handles one request per connection at a time: a Metadata sent after a held
    # ApiVersions on the same connection is not answered (nor handled) before it
    with broker.hold("ApiVersions") as gate, WireClient(broker.port) as c:
        c.send("ApiVersions", 0, {})
        c.send("Metadata", 1, METADATA_ALL)
        gate.wait_arrived(1)
        assert not answered(c)
        gate.release()
        c.receive("ApiVersions", 0)
        c.receive("Metadata", 1)


def test_delay_keeps_the_order_of_a_connections_responses(broker):
    fault = broker.faults.delay("ApiVersions", 0.05, count=1)
    with WireClient(broker.port) as c:
        first = c.send("ApiVersions", 0, {})
        second = c.send("Metadata", 1, METADATA_ALL)
        assert c.receive("ApiVersions", 0)[0] == first
        assert c.receive("Metadata", 1)[0] == second
        c.request("ApiVersions", 0, {})          # count=1: the next one is not delayed
    assert fault.fired == 1 and fault.done


def test_drop_leaves_the_connection_stuck_and_others_served(broker):
    broker.faults.drop("Metadata")
    with WireClient(broker.port) as stuck, WireClient(broker.port) as other:
        stuck.send("Metadata", 1, METADATA_ALL)
        stuck.send("ApiVersions", 0, {})
        other.request("Metadata", 1, METADATA_ALL)     # count=1: only one was dropped
        assert not answered(stuck)


def test_close_fault_closes_the_connection(broker):
    broker.faults.close("Metadata")
    with WireClient(broker.port) as c:
        c.send("Metadata", 1, METADATA_ALL)
        with pytest.raises((ConnectionClosed, ConnectionResetError)):
            c.receive("Metadata", 1)


def test_intercept_answers_edits_drops_closes_and_awaits(broker):
    seen = []

    def answer(request):
        seen.append((request.api, request.version, request.client_id))
        return {"error_code": 0, "groups": [{"group_id": "invented", "protocol_type": "x"}]}
    with broker.intercept("ListGroups", answer), WireClient(broker.port) as c:
        resp = c.request("ListGroups", 1, {})
        assert [g["group_id"] for g in resp["groups"]] == ["invented"]
    assert seen == [("ListGroups", 1, "wire-test")]

    def rename(request):                     # PASS keeps edits: the handler sees the new name
        request["topics"] = [{"name": "renamed-by-intercept"}]
        return PASS
    with broker.intercept("Metadata", rename), WireClient(broker.port) as c:
        resp = c.request("Metadata", 1, {"topics": [{"name": "asked-for"}]})
        assert [t["name"] for t in resp["topics"]] == ["renamed-by-intercept"]

    async def later(request):                # an awaitable: answered when it is done
        await asyncio.sleep(0.01)
        return PASS
    with broker.intercept("ApiVersions", later), WireClient(broker.port) as c:
        assert c.request("ApiVersions", 0, {})["error_code"] == 0

    with broker.intercept("ApiVersions", lambda r: DROP), WireClient(broker.port) as c:
        c.send("ApiVersions", 0, {})
        assert not answered(c)
    with broker.intercept("ApiVersions", lambda r: CLOSE), WireClient(broker.port) as c:
        c.send("ApiVersions", 0, {})
        assert c.is_closed()
    with broker.intercept("ApiVersions", lambda r: 42), WireClient(broker.port) as c:
        c.send("ApiVersions", 0, {})          # a wrong return value closes, logged
        assert c.is_closed()


def test_limit_versions_answers_as_an_older_kafka(broker):
    from confluent_kafka import Producer
    broker.limit_versions("Produce", 2)
    broker.limit_versions("DescribeCluster", -1)
    with WireClient(broker.port) as c:
        table = {k["api_key"]: k for k in c.request("ApiVersions", 0, {})["api_keys"]}
        assert table[0]["max_version"] == 2 and 60 not in table
        c.send("Produce", 3, {"acks": 1, "timeout_ms": 1000, "topic_data": []})
        assert c.is_closed()                  # above the limit: as an old broker would
    broker.create_topic("old-produce")
    p = Producer({"bootstrap.servers": broker.bootstrap_servers})
    p.produce("old-produce", b"in a v1 message set")
    assert p.flush(20) == 0
    assert {r.version for r in broker.requests("Produce")
            if r["topic_data"] and r["topic_data"][0]["name"] == "old-produce"} <= {0, 1, 2}
    broker.limit_versions("Produce", None)
    with WireClient(broker.port) as c:
        table = {k["api_key"]: k for k in c.request("ApiVersions", 0, {})["api_keys"]}
        assert table[0]["max_version"] > 2


def test_bad_input_fails_at_once_with_the_valid_names(broker):
    with pytest.raises(ValueError, match="did you mean Produce.*valid names: .*JoinGroup"):
        broker.faults.push("Prodce", ["NOT_LEADER_OR_FOLLOWER"])
    with pytest.raises(ValueError, match=r"did you mean NOT_LEADER_OR_FOLLOWER\b") as guessed:
        broker.faults.push("Produce", ["NOT_LEADER"])
    assert "valid names" not in str(guessed.value)      # the guess, not ~130 names after it
    with pytest.raises(ValueError, match="unknown error 'QQQ'; valid names: .*UNKNOWN_SERVER"):
        broker.faults.push("Produce", ["QQQ"])
    with pytest.raises(ValueError, match="needs topic="):
        broker.faults.push("Produce", ["NOT_LEADER_OR_FOLLOWER"], partition=0)
    with pytest.raises(ValueError, match="JoinGroup requests name no topics"):
        broker.faults.push("JoinGroup", ["NOT_COORDINATOR"], topic="t")
    with pytest.raises(ValueError, match="at least one error"):
        broker.faults.push("Produce", [])
    with pytest.raises(ValueError, match="count must be"):
        broker.faults.drop("Produce", count=0)
    with pytest.raises(ValueError, match="serves Produce v.*limit_versions takes"):
        broker.limit_versions("Produce", 99)
    with pytest.raises(TypeError, match="function of the request"):
        broker.intercept("Produce", "not callable")
    with pytest.raises(ValueError, match="unknown API key 999"):
        broker.hold(999)


def test_stopping_with_a_held_request_does_not_handle_it(tmp_path):
    with Broker(data_dir=tmp_path / "data") as b:
        gate = b.hold("CreateTopics")
        with WireClient(b.port) as c:
            c.send("CreateTopics", 1, {"topics": [{"name": "never", "num_partitions": 1,
                                                    "replication_factor": 1}],
                                       "timeout_ms": 1000})
            gate.wait_arrived(1)
            b.stop()                          # the held request ends unanswered
            assert c.is_closed()
        b.start()
        assert b.topics() == []


def test_faults_on_an_api_the_broker_does_not_serve_are_refused():
    from gregor.testing.faults import Faults

    class OnlyProduce:                        # a broker serving Produce alone
        def call(self, method, *args, **kwargs):
            assert method == "served_versions"
            return {0: (3, 9)}
    with pytest.raises(ValueError, match="does not serve Fetch; it serves Produce"):
        Faults(OnlyProduce()).push("Fetch", ["NOT_LEADER_OR_FOLLOWER"])


def test_stopping_with_a_long_delay_pending_ends_it(tmp_path):
    # shutdown drains pending responses for up to gregor.shutdown.timeout.ms: were the delayed
    # request left waiting, stop() would take the whole (pytest-timeout-long) hour
    b = Broker({"gregor.shutdown.timeout.ms": 3600_000}).start()
    b.faults.delay("Metadata", 3600)
    with WireClient(b.port) as c:
        c.send("Metadata", 1, METADATA_ALL)
        for _ in range(200):             # until the broker has the request
            if b.requests("Metadata"):
                break
            select.select([], [], [], 0.01)
        b.stop()                         # does not wait an hour: the delayed request ends
        assert c.is_closed()
