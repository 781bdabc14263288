"""Helpers for KIP-848 coordinator tests: topic metadata, and a member that heartbeats the
way a client does (it reports what it owns, revokes what it is asked to)."""
from __future__ import annotations

from gregor.broker.group.coordinator import GroupCoordinator

from .fakes import Answer, make


class FakeMetadata:
    def __init__(self, **topics: int):
        self.topics: dict[str, tuple[bytes, int]] = {}
        for name, n in topics.items():
            self.add(name, n)

    def add(self, name: str, partitions: int) -> bytes:
        tid = (name.encode() * 16)[:16]
        self.topics[name] = (tid, partitions)
        return tid

    def topic(self, name):
        return self.topics.get(name)

    def names(self):
        return list(self.topics)

    def name(self, topic_id):
        return next((n for n, (t, _) in self.topics.items() if t == topic_id), None)

    def id(self, name) -> bytes:
        return self.topics[name][0]


def make_consumer(meta: FakeMetadata | None = None, **cfg):
    c, timers, store = make(**cfg)
    c.metadata = meta or FakeMetadata(a=4, b=2)
    return c, timers, store


def reload(c: GroupCoordinator, timers, store) -> GroupCoordinator:
    """A second coordinator loading what the first wrote (a restart or a coordinator move)."""
    c.close()
    c2 = GroupCoordinator(c.config, store, timers, timers.clock, metadata=c.metadata)
    for n in range(c.config.num_partitions):
        c2.load_partition(n, store.batches.get(n, []))
    return c2


def request(group="g", member_id="", epoch=0, topics=None, owned=None, instance_id=None,
            assignor=None, rebalance_timeout_ms=None, regex=None, rack_id=None) -> dict:
    if rebalance_timeout_ms is None:
        rebalance_timeout_ms = 60000 if epoch == 0 else -1
    return {"group_id": group, "member_id": member_id, "member_epoch": epoch,
            "instance_id": instance_id, "rack_id": rack_id,
            "rebalance_timeout_ms": rebalance_timeout_ms, "subscribed_topic_names": topics,
            "subscribed_topic_regex": regex, "server_assignor": assignor,
            "topic_partitions": owned}


def heartbeat(c: GroupCoordinator, version: int = 1, **kw) -> dict:
    a = Answer()
    c.consumer_heartbeat(request(**kw), version, "client", "/127.0.0.1", a)
    assert a.done, "the heartbeat was not answered"
    return a.value


class Member:
    """A client's side of the protocol: its member id, epoch and owned partitions."""

    def __init__(self, c: GroupCoordinator, member_id: str, topics, group="g",
                 instance_id=None, assignor=None, rebalance_timeout_ms=60000):
        self.c, self.id, self.topics, self.group = c, member_id, list(topics), group
        self.instance_id, self.assignor = instance_id, assignor
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.epoch = 0
        self.owned: dict[bytes, set[int]] = {}
        self.last: dict | None = None

    def owned_list(self) -> list[dict]:
        return [{"topic_id": t, "partitions": sorted(ps)} for t, ps in self.owned.items() if ps]

    def join(self) -> dict:
        self.epoch, self.owned = 0, {}
        r = heartbeat(self.c, group=self.group, member_id=self.id, epoch=0, topics=self.topics,
                      owned=[], instance_id=self.instance_id, assignor=self.assignor,
                      rebalance_timeout_ms=self.rebalance_timeout_ms)
        return self._apply(r)

    def beat(self, **kw) -> dict:
        args = dict(group=self.group, member_id=self.id, epoch=self.epoch,
                    owned=self.owned_list(), instance_id=self.instance_id)
        args.update(kw)
        return self._apply(heartbeat(self.c, **args))

    def _apply(self, r: dict) -> dict:
        self.last = r
        if r["error_code"] == 0:
            self.epoch = r["member_epoch"]
            if r["assignment"] is not None:
                # The client revokes at once what it no longer has, and takes the new ones.
                self.owned = {t["topic_id"]: set(t["partitions"])
                              for t in r["assignment"]["topic_partitions"] if t["partitions"]}
        return r

    def partitions(self) -> set:
        return {(t, p) for t, ps in self.owned.items() for p in ps}


def settle(members, rounds: int = 10, check=None) -> None:
    """Heartbeat every member in turn until nothing changes; `check` runs after each beat."""
    for _ in range(rounds):
        before = [(m.epoch, frozenset(m.partitions())) for m in members]
        for m in members:
            m.beat()
            if check:
                check()
        if [(m.epoch, frozenset(m.partitions())) for m in members] == before:
            return


def no_partition_twice(members) -> None:
    seen: dict = {}
    for m in members:
        for tp in m.partitions():
            assert tp not in seen, f"{tp} owned by {seen[tp]} and {m.id} at once"
            seen[tp] = m.id
