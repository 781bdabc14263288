"""The group coordinator's side of the share-state persister (share/state_admin.py) without
a cluster: keys are sent, one request per coordinator broker, to the broker leading their
`__share_group_state` partition (in-process for this broker's own), answers are matched back
per key, and keys whose coordinator is unknown or unreachable get
COORDINATOR_NOT_AVAILABLE."""
import asyncio
from types import SimpleNamespace

from gregor.broker.share import state_admin
from gregor.broker.share.coordinator import ShareCoordinator
from gregor.protocol.errors import ErrorCode as E
from tests.broker.share.test_share_coordinator import FakeStore

TID = bytes(range(16))


class CommittingStore(FakeStore):
    def append_then(self, partition, records, done, durable=True):
        self.logs[partition].extend(records)
        done(0, 0)


class FakePersister:
    """Broker 1; partition 0 of the state topic is led here, 1 by broker 2 (answering
    through its own coordinator), 2 by broker 3 (unreachable)."""

    def __init__(self):
        self.broker = SimpleNamespace(cluster=SimpleNamespace(broker_id=1))
        self.coordinator = ShareCoordinator(CommittingStore())
        self.coordinator.became_leader(0, 0)
        self.remote = ShareCoordinator(CommittingStore())
        self.remote.became_leader(1, 0)
        self.sent = []

    def _leader(self, key):
        return {0: 1, 1: 2, 2: 3}[self.coordinator.partition_of(key)]

    async def _request(self, broker_id, api, body):
        self.sent.append((broker_id, api.name, body))
        if broker_id == 3:
            return None
        out = []
        for t in body["topics"]:
            parts = []
            for p in t["partitions"]:
                key = (body["group_id"], t["topic_id"], p["partition"])
                entry = {"partition": p["partition"], "error_message": None}
                if api.name == "ReadShareGroupStateSummary":
                    code, epoch, start = self.remote.summary(key, p["leader_epoch"])
                    entry.update(error_code=code, state_epoch=max(epoch, 0),
                                 start_offset=start)
                elif api.name == "InitializeShareGroupState":
                    codes = []
                    self.remote.initialize(key, p["state_epoch"], p["start_offset"],
                                           codes.append)
                    entry["error_code"] = codes[0]
                else:
                    codes = []
                    self.remote.delete(key, codes.append)
                    entry["error_code"] = codes[0]
                parts.append(entry)
            out.append({"topic_id": t["topic_id"], "partitions": parts})
        return {"results": out}


def keys_on(persister, n_per_partition=2):
    found = {0: [], 1: [], 2: []}
    i = 0
    while any(len(v) < n_per_partition for v in found.values()):
        key = ("g", TID, i)
        found[persister.coordinator.partition_of(key)].append(key)
        i += 1
    return [k for v in found.values() for k in v[:n_per_partition]], found


def test_initialize_summary_delete_reach_each_coordinator_once_per_call():
    ps = FakePersister()
    keys, by_partition = keys_on(ps)
    run = asyncio.run
    got = run(state_admin.summary(ps, keys))
    assert set(got) == set(keys)
    for k in by_partition[0]:
        assert got[k] == (E.NONE, -1, -1)          # in-process: no state epoch yet
    for k in by_partition[1]:
        assert got[k] == (E.NONE, 0, -1)           # over the wire: epoch 0, start -1
    for k in by_partition[2]:
        assert got[k][0] == E.COORDINATOR_NOT_AVAILABLE
    assert [(b, name) for b, name, _ in ps.sent] == [
        (2, "ReadShareGroupStateSummary"), (3, "ReadShareGroupStateSummary")]
    assert len(ps.sent[0][2]["topics"][0]["partitions"]) == 2      # both keys in one

    codes = run(state_admin.initialize(ps, {k: (1, 40 + k[2]) for k in keys}))
    for k in by_partition[0] + by_partition[1]:
        assert codes[k] == E.NONE
    for k in by_partition[2]:
        assert codes[k] == E.COORDINATOR_NOT_AVAILABLE
    got = run(state_admin.summary(ps, by_partition[0] + by_partition[1]))
    assert all(got[k] == (E.NONE, 1, 40 + k[2]) for k in got)
    # an older state epoch is fenced, locally and remotely alike
    codes = run(state_admin.initialize(ps, {k: (0, 1) for k in by_partition[0] +
                                            by_partition[1]}))
    assert set(codes.values()) == {E.FENCED_STATE_EPOCH}

    codes = run(state_admin.delete(ps, by_partition[0] + by_partition[1]))
    assert set(codes.values()) == {E.NONE}
    got = run(state_admin.summary(ps, by_partition[0] + by_partition[1]))
    assert all(got[k] == (E.NONE, 2, -1) for k in got)
