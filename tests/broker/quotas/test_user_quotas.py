"""User quotas follow the principal a listener authenticates (SASL/SCRAM here): alice's quota
throttles alice on any connection, not bob, not unauthenticated clients (User:ANONYMOUS)."""
from __future__ import annotations

import pytest

from gregor.client.admin import AdminClient
from tests.support.sasl_wire import connect, login
from tests.support.secure_broker import USERS, start_secure_broker

METADATA = {"topics": None, "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    # 2 x 1 s windows: 0.01% is then 100 us of handling a second
    b = start_secure_broker(tmp_path_factory.mktemp("user-quotas"),
                            **{"quota.window.num": 2, "quota.window.size.seconds": 1})
    try:
        with AdminClient({"bootstrap.servers": f"127.0.0.1:{b.listeners['PLAINTEXT']}"}) as a:
            # 0.01% of the broker's time: a few requests are over it
            a.alter_client_quotas([({"user": "alice"}, {"request_percentage": 0.01})])
        yield b
    finally:
        b.stop()


def throttled_within(c, requests: int = 200) -> bool:
    for _ in range(requests):
        if c.request("Metadata", 8, METADATA)["throttle_time_ms"]:
            return True
    return False


def test_the_authenticated_user_is_the_quota_entity(broker):
    port = broker.listeners["SASL_PLAINTEXT"]
    with connect(port) as c:
        assert login(c, "SCRAM-SHA-256", "alice", USERS["alice"])["error_code"] == 0
        assert throttled_within(c)
    with connect(port) as c:
        assert login(c, "SCRAM-SHA-512", "bob", USERS["bob"])["error_code"] == 0
        assert not throttled_within(c, 50)
    with connect(broker.listeners["PLAINTEXT"]) as c:       # User:ANONYMOUS
        assert not throttled_within(c, 50)
