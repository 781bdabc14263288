"""AdminClient.list_offsets_of_groups: many groups' committed offsets in a few requests (batched
FindCoordinator v4 and OffsetFetch v8), the same answers as one list_group_offsets per group."""
from __future__ import annotations

import pytest

from gregor import AdminClient, Consumer

pytestmark = pytest.mark.interop


def test_batched_offsets_match_one_call_per_group(client_broker, new_topic):
    topic = new_topic(2)
    groups = [f"batch-{i}" for i in range(5)]
    for i, g in enumerate(groups):
        c = Consumer({"bootstrap.servers": client_broker.bootstrap, "group.id": g,
                      "enable.auto.commit": False})
        c.assign([(topic, 0), (topic, 1)])
        c.commit(offsets=[(topic, 0, i), (topic, 1, 10 + i)])
        c.close()
    with AdminClient({"bootstrap.servers": client_broker.bootstrap}) as admin:
        batched = admin.list_offsets_of_groups(groups + ["batch-none"])
        assert batched["batch-3"] == {(topic, 0): 3, (topic, 1): 13}
        assert batched["batch-none"] == {}
        for g in groups:
            one = {tp: o for tp, (o, _) in admin.list_group_offsets(g).items()}
            assert batched[g] == one
        assert [g.group_id for g in admin.list_groups() if g.group_id in groups] == groups
        assert all(g.group_type == "classic" for g in admin.list_groups()
                   if g.group_id in groups)
