"""What the controller tells the brokers, and when (sans-I/O).

Kafka's ZooKeeper-mode controller keeps the brokers' view of the cluster: brokers do not read
partition states or the broker list from ZooKeeper, they are told. After each of its reads of
ZooKeeper the controller compares the cluster with what it has already told the brokers and
sends:
- **LeaderAndIsr** to the live replicas of every partition whose leader or leader epoch changed
  (or that is new), so they lead or follow; to a broker it has not told anything yet (it just
  started, came back under a new session, or this controller was just elected) a *full*
  LeaderAndIsr (type 1) with every replica it holds, which also lets it delete the stray
  replicas it is not given;
- **UpdateMetadata** to every live broker: the live brokers with all their listeners, and the
  partition states that changed (all of them to a broker told nothing yet); a deleted
  partition is sent with leader -2, Kafka's marker for "remove it from your cache";
- **StopReplica** with delete to the live replicas of a deleted topic's partitions, after the
  UpdateMetadata that removes them from the caches.
An ISR change written by a leader reaches the others by UpdateMetadata only (the leader epoch is
unchanged, so LeaderAndIsr would be refused as stale), as in Kafka.

The planner remembers what it told; a broker that dies is forgotten, so whatever it missed is
in the full requests it gets when it returns.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import znodes as z

FULL, INCREMENTAL = 1, 0
LEADER_DURING_DELETE = -2          # Kafka's leader id for a partition being deleted
LEADER_AND_ISR_VERSION = 7
UPDATE_METADATA_VERSION = 8
STOP_REPLICA_VERSION = 4
PLAINTEXT = 0                      # Kafka's SecurityProtocol ids
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
_PROTOCOL_NAMES = {v: k for k, v in SECURITY_PROTOCOL_IDS.items()}


@dataclass
class Push:
    broker_id: int
    broker_epoch: int
    api: str                       # "LeaderAndIsr", "UpdateMetadata" or "StopReplica"
    version: int
    body: dict


@dataclass(frozen=True)
class _Told:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int
    replicas: tuple[int, ...]
    topic_id: str | None


class PushPlanner:
    def __init__(self, controller_id: int, controller_epoch: int):
        self.controller_id = controller_id
        self.controller_epoch = controller_epoch
        self.brokers: dict[int, int] = {}                # broker id -> epoch told
        self.told: dict[tuple[str, int], _Told] = {}

    def plan(self, snap) -> list[Push]:
        """The requests that bring every live broker up to `snap` (a ClusterSnapshot with
        broker_epochs), in the order each broker must apply them."""
        live = dict(sorted(snap.brokers.items()))
        epochs = {b: snap.broker_epochs.get(b, -1) for b in live}
        new = [b for b in live if self.brokers.get(b) != epochs[b]]
        current = self._current(snap)
        changed = [k for k, t in current.items() if self.told.get(k) != t]
        deleted = [k for k in self.told if k not in current]
        list_changed = set(self.brokers) != set(live) or bool(new)
        pushes: list[Push] = []
        for b in live:
            fresh = b in new
            if fresh:
                parts = sorted(k for k, t in current.items() if b in t.replicas)
            else:
                parts = sorted(k for k in changed if b in current[k].replicas
                               and self._leadership_moved(self.told.get(k), current[k]))
            if parts or fresh:
                pushes.append(self._leader_and_isr(b, epochs[b], parts, current, live,
                                                   FULL if fresh else INCREMENTAL))
            if fresh:
                pushes.append(self._update_metadata(b, epochs[b], sorted(current), [],
                                                    current, live))
            elif changed or deleted or list_changed:
                pushes.append(self._update_metadata(b, epochs[b], sorted(changed), deleted,
                                                    current, live))
            # after UpdateMetadata, as Kafka's topic deletion: clients stop being sent to
            # the partitions before the replicas go
            stop = sorted(k for k in deleted if b in self.told[k].replicas)
            if stop:
                pushes.append(self._stop_replica(b, epochs[b], stop))
        self.brokers = epochs
        self.told = current
        return pushes

    # -- what the cluster is -----------------------------------------------------------------

    @staticmethod
    def _current(snap) -> dict[tuple[str, int], _Told]:
        out = {}
        for name, view in snap.topics.items():
            if view.deleting:
                continue
            for p, replicas in view.assignment.partitions.items():
                s = view.states.get(p)
                if s is None:
                    continue             # no state yet: the controller writes it first
                out[(name, p)] = _Told(s.leader, s.leader_epoch, tuple(s.isr), s.zk_version,
                                       tuple(replicas), view.assignment.topic_id)
        return out

    @staticmethod
    def _leadership_moved(old: _Told | None, new: _Told) -> bool:
        return old is None or (old.leader, old.leader_epoch, old.replicas) != \
            (new.leader, new.leader_epoch, new.replicas)

    # -- the requests ------------------------------------------------------------------------

    def _header(self, broker_epoch: int) -> dict:
        return {"controller_id": self.controller_id, "is_kraft_controller": False,
                "controller_epoch": self.controller_epoch, "broker_epoch": broker_epoch}

    def _leader_and_isr(self, b, epoch, parts, current, live, kind) -> Push:
        topics: dict[str, dict] = {}
        leaders = set()
        for name, p in parts:
            t = current[(name, p)]
            entry = topics.setdefault(name, {"topic_name": name,
                                             "topic_id": z.topic_id_bytes(t.topic_id),
                                             "partition_states": []})
            entry["partition_states"].append({
                "partition_index": p, "controller_epoch": self.controller_epoch,
                "leader": t.leader, "leader_epoch": t.leader_epoch, "isr": list(t.isr),
                "partition_epoch": t.zk_version, "replicas": list(t.replicas),
                "adding_replicas": [], "removing_replicas": [], "is_new": False,
                "leader_recovery_state": 0})
            if t.leader in live:
                leaders.add(t.leader)
        body = self._header(epoch)
        body["type"] = kind
        body["topic_states"] = list(topics.values())
        # Where each leader is reached (its first listener; a broker also resolves the
        # inter-broker listener from UpdateMetadata, which follows).
        body["live_leaders"] = [{"broker_id": lb, "host_name": live[lb].host,
                                 "port": live[lb].port} for lb in sorted(leaders)]
        return Push(b, epoch, "LeaderAndIsr", LEADER_AND_ISR_VERSION, body)

    def _update_metadata(self, b, epoch, parts, deleted, current, live) -> Push:
        topics: dict[str, dict] = {}

        def entry(name, topic_id):
            return topics.setdefault(name, {"topic_name": name,
                                            "topic_id": z.topic_id_bytes(topic_id),
                                            "partition_states": []})
        for name, p in parts:
            t = current[(name, p)]
            entry(name, t.topic_id)["partition_states"].append({
                "partition_index": p, "controller_epoch": self.controller_epoch,
                "leader": t.leader, "leader_epoch": t.leader_epoch, "isr": list(t.isr),
                "zk_version": t.zk_version, "replicas": list(t.replicas),
                "offline_replicas": [r for r in t.replicas if r not in live]})
        for name, p in sorted(deleted):
            t = self.told[(name, p)]
            entry(name, t.topic_id)["partition_states"].append({
                "partition_index": p, "controller_epoch": self.controller_epoch,
                "leader": LEADER_DURING_DELETE, "leader_epoch": t.leader_epoch,
                "isr": list(t.isr), "zk_version": t.zk_version, "replicas": list(t.replicas),
                "offline_replicas": []})
        body = self._header(epoch)
        body["type"] = 0
        body["topic_states"] = list(topics.values())
        body["live_brokers"] = [_live_broker(info) for info in live.values()]
        return Push(b, epoch, "UpdateMetadata", UPDATE_METADATA_VERSION, body)

    def _stop_replica(self, b, epoch, parts) -> Push:
        topics: dict[str, dict] = {}
        for name, p in parts:
            topics.setdefault(name, {"topic_name": name, "partition_states": []})[
                "partition_states"].append({"partition_index": p, "leader_epoch": -1,
                                            "delete_partition": True})
        body = self._header(epoch)
        body["topic_states"] = list(topics.values())
        return Push(b, epoch, "StopReplica", STOP_REPLICA_VERSION, body)


def _live_broker(info: z.BrokerInfo) -> dict:
    endpoints = []
    for entry in info.endpoints or (f"PLAINTEXT://{info.host}:{info.port}",):
        name, host, port = z.split_endpoint(entry)
        endpoints.append({"port": port, "host": host, "listener": name,
                          "security_protocol": SECURITY_PROTOCOL_IDS.get(info.protocol(name),
                                                                         PLAINTEXT)})
    return {"id": info.broker_id, "endpoints": endpoints, "rack": info.rack}


def broker_info(entry: dict) -> z.BrokerInfo:
    """A live broker of UpdateMetadata as the BrokerInfo a broker keeps in its cache."""
    endpoints = tuple(f"{e['listener']}://{e['host']}:{e['port']}" for e in entry["endpoints"])
    first = entry["endpoints"][0] if entry["endpoints"] else {"host": "", "port": -1}
    plain = next((e for e in entry["endpoints"] if e["listener"] == "PLAINTEXT"), first)
    protocols = tuple((e["listener"], _PROTOCOL_NAMES.get(e.get("security_protocol"),
                                                          "PLAINTEXT"))
                      for e in entry["endpoints"])
    return z.BrokerInfo(entry["id"], plain["host"], plain["port"], entry.get("rack"), 0,
                        endpoints, protocols)
