"""The share coordinator's rules without a cluster (a store standing in for the
`__share_group_state` partition log): only the keys of partitions it leads are served
(NOT_COORDINATOR otherwise), a write becomes what reads return only once committed, a
leader epoch older than one that read or wrote the key is FENCED_LEADER_EPOCH, loading
replays the last snapshot per key (tombstones delete), and stopping leading forgets them."""
from gregor.broker.share import state_records as S
from gregor.broker.share.coordinator import ShareCoordinator
from gregor.broker.share.persister import from_answer, to_batches
from gregor.protocol.errors import ErrorCode as E

TID = bytes(range(16))


class FakeStore:
    num_partitions = 3

    def __init__(self):
        self.owned = {}
        self.logs = {k: [] for k in range(3)}
        self.pending = []                     # (partition, records, done) not yet committed
        self.durable = []                     # each append's durable= (waits for an fsync)

    def own(self, partition, epoch):
        self.owned[partition] = (epoch, 1)

    def disown(self, partition):
        self.owned.pop(partition, None)

    def ownership(self, partition):
        return self.owned.get(partition)

    def records(self, partition):
        return list(self.logs[partition])

    def append_then(self, partition, records, done, durable=True):
        self.pending.append((partition, records, done))
        self.durable.append(durable)

    def commit_all(self, code=0):
        for partition, records, done in self.pending:
            self.logs[partition].extend(records)
            done(code, 0)
        self.pending = []


def state(start, runs=()):
    runs = list(runs)
    end = max([r[1] + 1 for r in runs], default=start)
    return {"state_epoch": 0, "start_offset": start, "end_offset": end, "batches": runs}


def test_serves_only_the_keys_of_partitions_it_leads():
    store = FakeStore()
    c = ShareCoordinator(store)
    key = ("g", TID, 0)
    codes = []
    c.write(key, state(5), 1, codes.append)
    assert codes == [E.NOT_COORDINATOR] and c.read(key, 1) == (E.NOT_COORDINATOR, None)
    c.became_leader(c.partition_of(key), 0)
    assert c.read(key, 1) == (E.NONE, None)          # not initialised yet


def test_a_write_is_read_back_once_committed_and_older_leaders_are_fenced():
    store = FakeStore()
    c = ShareCoordinator(store)
    key = ("g", TID, 0)
    c.became_leader(c.partition_of(key), 0)
    codes = []
    c.write(key, state(5, [(5, 6, 2, 1), (7, 7, 0, 2)]), 3, codes.append)
    assert codes == [] and c.read(key, 3) == (E.NONE, None)     # not committed yet
    assert store.durable == [False]      # committed as acks=all is, without the local fsync
    store.commit_all()
    assert codes == [E.NONE]
    code, got = c.read(key, 4)                        # a newer leader reads it
    assert code == E.NONE and got["start_offset"] == 5 and got["end_offset"] == 8
    c.write(key, state(8), 3, codes.append)           # the deposed leader writes
    assert codes[-1] == E.FENCED_LEADER_EPOCH
    assert c.read(key, 3)[0] == E.FENCED_LEADER_EPOCH


def test_loading_replays_the_last_snapshot_and_stopping_forgets():
    store = FakeStore()
    c = ShareCoordinator(store)
    a, b = ("g", TID, 0), ("h", TID, 1)
    for key in (a, b):
        store.logs[c.partition_of(key)] += [
            (S.encode_key(*key), S.encode_snapshot(0, 1, [], 2)),
            (S.encode_key(*key), S.encode_snapshot(1, 4, [(4, 5, 0, 3)], 2))]
    store.logs[c.partition_of(b)].append((S.encode_key(*b), None))     # b deleted
    for k in {c.partition_of(a), c.partition_of(b)}:
        c.became_leader(k, 7)
    code, got = c.read(a, 2)
    assert code == E.NONE and got["start_offset"] == 4 and got["batches"] == [(4, 5, 0, 3)]
    assert c.read(b, 2) == (E.NONE, None)
    c.stopped_leading(c.partition_of(a))
    assert c.read(a, 2) == (E.NOT_COORDINATOR, None)


def test_loading_folds_updates_and_snapshots_go_on_from_the_loaded_epoch():
    """A ShareUpdate after the snapshot is folded in when loading; the next snapshot written
    carries the next snapshot epoch, the loaded create timestamp (same state epoch) and the
    coordinator's clock as its write timestamp; an initialize starts a new create time."""
    clock = [5000]
    store = FakeStore()
    c = ShareCoordinator(store, lambda: clock[0])
    key = ("g", TID, 0)
    store.logs[c.partition_of(key)] += [
        (S.encode_key(*key), S.encode_snapshot(2, 4, [(4, 9, 0, 1)], 3, snapshot_epoch=6,
                                               create_ms=1000, write_ms=1500)),
        (S.encode_key(*key, S.UPDATE), S.encode_update(6, -1, -1, [(5, 6, 2, 1)]))]
    c.became_leader(c.partition_of(key), 1)
    code, got = c.read(key, 3)
    assert code == E.NONE and got["batches"] == [(4, 4, 0, 1), (5, 6, 2, 1), (7, 9, 0, 1)]
    codes = []
    c.write(key, {**state(7, [(7, 9, 0, 1)]), "state_epoch": 2}, 3, codes.append)
    store.commit_all()
    written = S.decode_snapshot(store.logs[c.partition_of(key)][-1][1])
    assert codes == [E.NONE] and written["leader_epoch"] == 3
    assert (written["snapshot_epoch"], written["create_timestamp"],
            written["write_timestamp"]) == (7, 1000, 5000)
    clock[0] = 6000
    c.initialize(key, 3, 20, codes.append)
    store.commit_all()
    written = S.decode_snapshot(store.logs[c.partition_of(key)][-1][1])
    assert (written["snapshot_epoch"], written["state_epoch"], written["create_timestamp"],
            written["write_timestamp"]) == (8, 3, 6000, 6000)


def test_wire_batches_round_trip():
    runs = [(4, 5, 0, 3), (6, 9, 2, 1)]
    answer = {"state_epoch": 2, "start_offset": 4, "state_batches": to_batches(runs)}
    assert from_answer(answer) == {"state_epoch": 2, "start_offset": 4, "end_offset": 10,
                                   "batches": runs}
    assert from_answer({"state_epoch": 0, "start_offset": -1, "state_batches": []}) is None


# -- the group coordinator's APIs: InitializeShareGroupState, DeleteShareGroupState,
#    ReadShareGroupStateSummary, and the state epoch they raise -----------------------------

def _led(key=("g", TID, 0)):
    store = FakeStore()
    c = ShareCoordinator(store)
    c.became_leader(c.partition_of(key), 0)
    return store, c, key


def test_summary_answers_not_coordinator_and_minus_one_without_state():
    store = FakeStore()
    c = ShareCoordinator(store)
    key = ("g", TID, 0)
    assert c.summary(key) == (E.NOT_COORDINATOR, -1, -1)
    c.became_leader(c.partition_of(key), 0)
    assert c.summary(key) == (E.NONE, -1, -1)


def test_initialize_sets_the_start_and_fences_older_state_epochs():
    store, c, key = _led()
    codes = []
    c.write(key, {**state(5, [(5, 6, 2, 1)]), "state_epoch": 0}, 3, codes.append)
    store.commit_all()
    assert c.summary(key) == (E.NONE, 0, 5)
    c.initialize(key, 1, 20, codes.append)
    assert c.summary(key) == (E.NONE, 0, 5)          # not committed yet
    store.commit_all()
    assert codes == [E.NONE, E.NONE]
    assert c.summary(key) == (E.NONE, 1, 20)
    code, got = c.read(key, 3)
    assert code == E.NONE and got["start_offset"] == 20 and got["batches"] == []
    # the leader still holding epoch 0 writes: fenced by the state epoch
    c.write(key, {**state(7), "state_epoch": 0}, 3, codes.append)
    assert codes[-1] == E.FENCED_STATE_EPOCH
    c.initialize(key, 0, 1, codes.append)
    assert codes[-1] == E.FENCED_STATE_EPOCH
    # the leader epoch seen before the initialize still fences deposed leaders
    c.write(key, {**state(30), "state_epoch": 1}, 2, codes.append)
    assert codes[-1] == E.FENCED_LEADER_EPOCH
    c.write(key, {**state(30), "state_epoch": 1}, 3, codes.append)
    store.commit_all()
    assert codes[-1] == E.NONE and c.summary(key) == (E.NONE, 1, 30)


def test_summary_is_read_only_and_checks_leader_epochs_only_when_given():
    store, c, key = _led()
    c.write(key, state(5), 4, lambda code: None)
    store.commit_all()
    assert c.summary(key, -1) == (E.NONE, 0, 5)
    assert c.summary(key, 2) == (E.FENCED_LEADER_EPOCH, -1, -1)
    assert c.summary(key, 9)[0] == E.NONE
    assert c.read(key, 5)[0] == E.NONE               # the summary did not raise it to 9


def test_initialize_without_a_start_offset_keeps_the_epoch_for_the_leader():
    store, c, key = _led()
    codes = []
    c.initialize(key, 2, -1, codes.append)
    store.commit_all()
    code, got = c.read(key, 0)
    assert codes == [E.NONE] and code == E.NONE
    assert got["state_epoch"] == 2 and got["start_offset"] == -1


def test_delete_writes_a_tombstone_and_keeps_fencing_the_old_state():
    store, c, key = _led()
    codes = []
    c.write(key, {**state(5), "state_epoch": 3}, 1, codes.append)
    store.commit_all()
    c.delete(key, codes.append)
    assert c.summary(key) == (E.NONE, 3, 5)          # until committed
    store.commit_all()
    assert codes == [E.NONE, E.NONE]
    assert store.logs[c.partition_of(key)][-1] == (S.encode_key(*key), None)
    assert c.summary(key) == (E.NONE, 4, -1)
    code, got = c.read(key, 1)                        # the leader starts over at epoch 4
    assert code == E.NONE and got["state_epoch"] == 4 and got["start_offset"] == -1
    c.write(key, {**state(9), "state_epoch": 3}, 1, codes.append)
    assert codes[-1] == E.FENCED_STATE_EPOCH
    c.write(key, {**state(9), "state_epoch": 4}, 1, codes.append)
    store.commit_all()
    assert codes[-1] == E.NONE and c.summary(key) == (E.NONE, 4, 9)
    other = ("h", TID, 0)
    c.became_leader(c.partition_of(other), 1)
    c.delete(other, codes.append)                     # a key without state: fine
    store.commit_all()
    assert codes[-1] == E.NONE
    elsewhere = next(k for k in (("x", TID, n) for n in range(50)) if not c.coordinates(k))
    c.delete(elsewhere, codes.append)
    c.initialize(elsewhere, 1, 0, codes.append)
    assert codes[-2:] == [E.NOT_COORDINATOR, E.NOT_COORDINATOR]


def test_a_deleted_state_read_back_by_the_leader_over_the_wire():
    answer = {"state_epoch": 4, "start_offset": -1, "state_batches": []}
    assert from_answer(answer) == {"state_epoch": 4, "start_offset": -1, "end_offset": -1,
                                   "batches": []}
