"""gregor.testing: a real Kafka broker inside your own tests.

    from gregor.testing import Broker

    with Broker() as broker:                       # in-process, on its own thread, sub-second
        broker.create_topic("orders", partitions=3)
        broker.faults.push("Produce", ["NOT_LEADER_OR_FOLLOWER"], topic="orders", partition=0)
        producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers})

What is here (docs/testing.md has the guide and examples that run):
- `Broker`: the real broker in this process, on its own event loop in a daemon thread;
- `BrokerProcess`: the broker as a child process (kill -9, SIGSTOP, restart on the same port);
- `Cluster`: ZooKeeper plus N broker processes;
- fault injection on every broker (`faults.push/delay/drop/close`, `hold`, `intercept`,
  `requests`, `limit_versions`), `TcpProxy` for network faults, `ManualClock` for the
  coordinators' timers, `ReplicationChecker` for verdicts on what was acknowledged and read;
- `History`, `Recorder`, `check_history`: Jepsen-style histories of client operations and a
  checker for Kafka's anomalies (gregor.testing.history);
- `check_txn_indexes`: every replica's aborted-transaction index against what its log implies;
- a pytest plugin (gregor.testing.plugin, registered through the pytest11 entry point);
- Jepsen-style runs (docs/jepsen.md): `Network` (nodes in network namespaces, directed cuts),
  `NetnsCluster`, the seeded `Nemesis` and its `schedule`, `python -m gregor.testing.jepsen`.

Names are imported on first use, so `import gregor.testing` (and the pytest plugin) stays cheap
for test runs that never start a broker.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "Broker": "gregor.testing.inprocess",
    "BrokerProcess": "gregor.testing.process",
    "Cluster": "gregor.testing.cluster",
    "ZooKeeperServer": "gregor.testing.zookeeper",
    "ZooKeeperMissing": "gregor.testing.zookeeper",
    "TcpProxy": "gregor.testing.proxy",
    "ReplicationChecker": "gregor.testing.checkers",
    "ManualClock": "gregor.testing.clock",
    "Faults": "gregor.testing.faults",
    "Fault": "gregor.testing.faults",
    "Gate": "gregor.testing.faults",
    "Request": "gregor.testing.request",
    "PASS": "gregor.testing.request",
    "DROP": "gregor.testing.request",
    "CLOSE": "gregor.testing.request",
    "WireClient": "gregor.testing.wire",
    "Network": "gregor.testing.netns",
    "NetnsCluster": "gregor.testing.netcluster",
    "Nemesis": "gregor.testing.nemesis",
    "schedule": "gregor.testing.nemesis",
    "check_txn_indexes": "gregor.testing.txn_index_check",
    "History": "gregor.testing.history",
    "Recorder": "gregor.testing.history",
    "check_history": "gregor.testing.history.checker",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gregor.testing' has no attribute {name!r}; it offers "
                             f"{', '.join(__all__)}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
