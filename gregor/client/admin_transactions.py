"""The AdminClient's transaction and log-directory calls (mixed into AdminClient), as Kafka's
Admin has them (KIP-664, KIP-113):

    admin.list_transactions()                      # [TransactionListing] from every broker
    admin.describe_transactions(["payments-tx"])   # {id: TransactionDescription}
    admin.describe_producers([("orders", 0)])      # {(topic, p): [ProducerState]}
    admin.describe_log_dirs()                      # {broker id: [LogDirDescription]}

ListTransactions goes to every broker (each coordinates its own transactional ids),
DescribeTransactions to the id's coordinator (FindCoordinator with key type 1), DescribeProducers
to each partition's leader, DescribeLogDirs to each broker asked about.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..protocol.errors import ErrorCode, error_for_code

_TXN_KEY = 1     # FindCoordinator key_type of a transactional id
_RETRY = {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
          ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}


@dataclass
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: str
    coordinator_id: int


@dataclass
class TransactionDescription:
    transactional_id: str
    state: str
    timeout_ms: int
    start_time_ms: int          # -1 when no transaction is open
    producer_id: int
    producer_epoch: int
    coordinator_id: int
    partitions: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class ProducerState:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int    # -1 when the producer has no open transaction here


@dataclass
class LogDirDescription:
    log_dir: str
    error_code: int
    partition_sizes: dict[tuple[str, int], int] = field(default_factory=dict)
    total_bytes: int = -1
    usable_bytes: int = -1


def _unsupported(api: str, node) -> Exception:
    return error_for_code(ErrorCode.UNSUPPORTED_VERSION,
                          f"broker {node} does not support {api}")


class TransactionAdminMethods:
    """Needs the AdminClient's _net, _metadata and _timeout."""

    def _version(self, node, api: str, max_version: int, deadline: float) -> int:
        v = self._net.api_version(node, api, timeout=max(0.001, deadline - time.monotonic()))
        if v is None:
            raise _unsupported(api, node)
        return min(v, max_version)

    def list_transactions(self, timeout: float | None = None, *,
                          states: list[str] | None = None,
                          producer_ids: list[int] | None = None) -> list[TransactionListing]:
        """Every transactional id every broker coordinates, sorted by id."""
        deadline = time.monotonic() + self._timeout(timeout)
        self._metadata([], max(0.001, deadline - time.monotonic()))
        out = []
        for node in sorted(self._net.metadata.brokers):
            version = self._version(node, "ListTransactions", 1, deadline)
            body = {"state_filters": list(states or ()),
                    "producer_id_filters": [int(p) for p in producer_ids or ()],
                    "duration_filter": -1}
            resp = self._net.request(node, "ListTransactions", body, version,
                                     max(0.001, deadline - time.monotonic()))
            if resp["error_code"]:
                raise error_for_code(resp["error_code"],
                                     f"cannot list the transactions of broker {node}: "
                                     f"{error_for_code(resp['error_code']).message}")
            out += [TransactionListing(t["transactional_id"], t["producer_id"],
                                       t["transaction_state"], node)
                    for t in resp["transaction_states"]]
        return sorted(out, key=lambda t: t.transactional_id)

    def _txn_coordinator(self, txn_id: str, deadline: float) -> int:
        while True:
            remaining = max(0.001, deadline - time.monotonic())
            self._metadata([], remaining)
            version = min(3, self._net.api_version(None, "FindCoordinator", timeout=remaining)
                          or 0)
            if version < 1:
                raise _unsupported("FindCoordinator for transactions (v1+)", "bootstrap")
            resp = self._net.request(None, "FindCoordinator",
                                     {"key": txn_id, "key_type": _TXN_KEY}, version, remaining)
            code = resp.get("error_code", 0)
            if not code:
                return resp["node_id"]
            if code not in _RETRY or time.monotonic() >= deadline:
                raise error_for_code(code, f"cannot find the coordinator of transactional id "
                                           f"{txn_id!r}: {error_for_code(code).message}")
            time.sleep(0.1)

    def describe_transactions(self, transactional_ids, timeout: float | None = None
                              ) -> dict[str, TransactionDescription]:
        ids = [transactional_ids] if isinstance(transactional_ids, str) else \
            list(transactional_ids)
        deadline = time.monotonic() + self._timeout(timeout)
        by_node: dict[int, list[str]] = {}
        for tid in ids:
            by_node.setdefault(self._txn_coordinator(tid, deadline), []).append(tid)
        out = {}
        for node, node_ids in by_node.items():
            version = self._version(node, "DescribeTransactions", 0, deadline)
            resp = self._net.request(node, "DescribeTransactions",
                                     {"transactional_ids": node_ids}, version,
                                     max(0.001, deadline - time.monotonic()))
            for t in resp["transaction_states"]:
                if t["error_code"]:
                    code = t["error_code"]
                    raise error_for_code(code, f"cannot describe transactional id "
                                               f"{t['transactional_id']!r}: "
                                               f"{error_for_code(code).message}")
                parts = sorted((x["topic"], p) for x in t["topics"] for p in x["partitions"])
                out[t["transactional_id"]] = TransactionDescription(
                    t["transactional_id"], t["transaction_state"],
                    t["transaction_timeout_ms"], t["transaction_start_time_ms"],
                    t["producer_id"], t["producer_epoch"], node, parts)
        return {tid: out[tid] for tid in ids if tid in out}

    def describe_producers(self, partitions, timeout: float | None = None
                           ) -> dict[tuple[str, int], list[ProducerState]]:
        """The producers with state on each partition's leader (idempotent and transactional
        producers whose state the log still keeps)."""
        deadline = time.monotonic() + self._timeout(timeout)
        tps = [(t, int(p)) for t, p in partitions]
        self._metadata(sorted({t for t, _ in tps}), max(0.001, deadline - time.monotonic()))
        md = self._net.metadata
        by_leader: dict[int, dict[str, list[int]]] = {}
        for t, p in tps:
            leader = md.leader_for(t, p)
            if leader < 0:
                raise error_for_code(ErrorCode.LEADER_NOT_AVAILABLE,
                                     f"{t}-{p} has no leader right now; try again")
            by_leader.setdefault(leader, {}).setdefault(t, []).append(p)
        out: dict[tuple[str, int], list[ProducerState]] = {}
        for node, topics in by_leader.items():
            version = self._version(node, "DescribeProducers", 0, deadline)
            body = {"topics": [{"name": t, "partition_indexes": ps}
                               for t, ps in topics.items()]}
            resp = self._net.request(node, "DescribeProducers", body, version,
                                     max(0.001, deadline - time.monotonic()))
            for t in resp["topics"]:
                for p in t["partitions"]:
                    if p["error_code"]:
                        code = p["error_code"]
                        raise error_for_code(code, f"cannot describe the producers of "
                                                   f"{t['name']}-{p['partition_index']}: "
                                                   f"{p.get('error_message') or error_for_code(code).message}")
                    out[(t["name"], p["partition_index"])] = [
                        ProducerState(a["producer_id"], a["producer_epoch"], a["last_sequence"],
                                      a["last_timestamp"], a["coordinator_epoch"],
                                      a["current_txn_start_offset"])
                        for a in p["active_producers"]]
        return out

    def describe_log_dirs(self, brokers=None, timeout: float | None = None,
                          partitions=None) -> dict[int, list[LogDirDescription]]:
        """{broker id: [LogDirDescription]} for every partition of every log directory of
        the given brokers (all by default), or only the given [(topic, partition)]. Raises
        UnsupportedVersionError on a broker that does not serve DescribeLogDirs."""
        deadline = time.monotonic() + self._timeout(timeout)
        self._metadata([], max(0.001, deadline - time.monotonic()))
        nodes = sorted(self._net.metadata.brokers) if brokers is None else list(brokers)
        topics = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for t, p in partitions:
                by_topic.setdefault(t, []).append(int(p))
            topics = [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]
        out = {}
        for node in nodes:
            version = self._version(node, "DescribeLogDirs", 4, deadline)
            resp = self._net.request(node, "DescribeLogDirs", {"topics": topics}, version,
                                     max(0.001, deadline - time.monotonic()))
            if resp.get("error_code"):
                code = resp["error_code"]
                raise error_for_code(code, f"cannot describe the log dirs of broker {node}: "
                                           f"{error_for_code(code).message}")
            out[node] = [LogDirDescription(
                r["log_dir"], r["error_code"],
                {(t["name"], p["partition_index"]): p["partition_size"]
                 for t in r["topics"] for p in t["partitions"] if not p["is_future_key"]},
                r.get("total_bytes", -1), r.get("usable_bytes", -1)) for r in resp["results"]]
        return out

    def supports(self, api: str, timeout: float | None = None) -> bool:
        """Whether the bootstrap broker serves this API at a version gregor speaks."""
        return self._net.api_version(None, api, timeout=self._timeout(timeout)) is not None
