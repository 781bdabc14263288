"""Sender: the I/O thread that moves batches from the accumulator to the brokers.

Each loop: (idempotence) get a producer id, ask the accumulator which leaders have sendable
data, make sure those connections are ready, drain one Produce request per broker, expire
batches past delivery.timeout.ms, then poll the network (responses settle batches through
callbacks). `run_once()` is the whole loop body, so tests drive it with a fake network and clock.
"""
from __future__ import annotations

import logging
import random
import threading

from ...protocol.errors import ErrorCode, error_for_code
from ..errors import KafkaConnectionError, KafkaTimeoutError
from . import idempotence as idem

log = logging.getLogger("gregor.client.producer")

# Errors after which the partition's leader may have moved: refresh metadata before retrying.
_METADATA_ERRORS = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE,
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                    ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.FENCED_LEADER_EPOCH,
                    ErrorCode.UNKNOWN_LEADER_EPOCH}
_SEQUENCE_ERRORS = {ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, ErrorCode.UNKNOWN_PRODUCER_ID}
_CLIENT_MAX_VERSION = {"AddPartitionsToTxn": 3}
# Produce v3 is the first to carry record batch v2 (magic 2), which is all we write.
MIN_PRODUCE_VERSION = 3


class Sender:
    def __init__(self, cfg, network, accumulator, metrics, *, txn=None, clock):
        self.cfg = cfg
        self.network = network
        self.metadata = network.metadata
        self.acc = accumulator
        self.metrics = metrics
        self.txn = txn
        self.clock = clock
        self.acks = cfg["acks"]
        self.request_timeout_ms = cfg["request.timeout.ms"]
        self.max_request_size = cfg["max.request.size"]
        self.retries = cfg["retries"]
        self.backoff = cfg["retry.backoff.ms"] / 1000.0
        self.backoff_max = cfg["retry.backoff.max.ms"] / 1000.0
        self.delivery_timeout = cfg["delivery.timeout.ms"] / 1000.0
        self.idempotence_explicit = "enable.idempotence" in cfg.get("_explicit", ())
        self.running = True
        self.force_close = False
        self.in_flight: dict[int, list] = {}   # id(request) -> batches
        self._init_req = None
        self._init_retry_at = 0.0
        self.thread: threading.Thread | None = None
        self.fatal_error: Exception | None = None
        self.idle_until = 0.0
        self.transactional_id = cfg.get("transactional.id")
        self._txn_req = None          # a coordinator request (or lookup) awaiting its answer
        # (metadata version, deadline): a coordinator was found whose address the metadata
        # lacks; wait for the update asked for then (or the deadline), not a whole backoff
        self._coordinator_md: tuple[int, float] | None = None
        self.linger = cfg["linger.ms"] / 1000.0
        self.recheck = max(self.linger, 0.005)

    # -- thread ----------------------------------------------------------------------------
    def start(self, name: str) -> None:
        self.thread = threading.Thread(target=self.run, name=name, daemon=True)
        self.thread.start()

    def run(self) -> None:
        try:
            while self.running:
                self.run_once()
            # Graceful close: keep sending until every batch is settled (or forced).
            while not self.force_close and (self.acc.incomplete or self.in_flight
                                            or self.acc.stages):
                self.run_once()
            if self.force_close:
                self.abort_all(KafkaConnectionError(
                    "producer closed before the record was acknowledged"))
        except Exception as e:  # a bug: fail everything loudly rather than hang send() callers
            log.exception("producer sender thread crashed")
            self.fatal_error = e
            self.abort_all(e)
        finally:
            self.network.close()

    def initiate_close(self) -> None:
        self.running = False
        self.network.wakeup()

    def force(self) -> None:
        self.running = False
        self.force_close = True
        self.network.wakeup()

    # -- one loop ------------------------------------------------------------------------------
    def run_once(self) -> None:
        # Until we know how long we will sleep, any new batch must wake us: a batch appended
        # after the accumulator scan below but before poll() would otherwise wait out a long
        # sleep (a lost wakeup).
        self.idle_until = float("inf")
        now = self.clock()
        timeout = 3600.0
        txn = self.txn
        if txn is not None and txn.transactional:
            timeout = self._txn_step(now)
            if txn.state == idem.FATAL:
                self.abort_all(txn.fatal_error)
        elif txn is not None and txn.state != idem.READY:
            timeout = self._maybe_init_producer_id(now)
            if txn.state == idem.FATAL:
                self.abort_all(txn.fatal_error)
        # While the producer id is pending, can_send() holds batches back; metadata, expiry
        # and connections still make progress.
        timeout = min(timeout, self._send_producer_data(now))
        if txn is not None and txn.transactional and txn.pending_partitions \
                and self._txn_req is None:
            timeout = 0.0   # the drain just found partitions to add: ask for them now
        # send() wakes us only when we would otherwise sleep past a new batch's linger: a
        # wakeup is a syscall plus a GIL hand-off, too dear to make per batch. While requests
        # are in flight (when batches pile up fastest) we look again every linger.ms (at
        # least every 5 ms) instead, so no wakeup is needed then.
        if self.in_flight:
            timeout = min(timeout, self.recheck)
            self.idle_until = 0.0
        else:
            self.idle_until = now + timeout
        self.network.poll(timeout)
        self.idle_until = 0.0

    def _busy(self, node: int) -> bool:
        return self.network.in_flight_count(node) > 0

    def _send_producer_data(self, now: float) -> float:
        acc, net, md = self.acc, self.network, self.metadata
        check = acc.ready(md, now, self._busy)
        if check.unknown_leader_topics:
            for t in check.unknown_leader_topics:
                md.add_topic(t)
            md.request_update()
        timeout = min(check.next_delay, net.maybe_update_metadata(now))
        nodes = set()
        avail = acc.node_availability
        for node in check.nodes:
            if net.ready(node, now):
                nodes.add(node)
                if avail is not None:
                    avail.update(node, now, True)
            else:
                if avail is not None:
                    # Data waits for a node that cannot take it: only the ready time moves.
                    avail.update(node, now, False)
                delay = net.connection_delay(node, now)
                if delay:
                    timeout = min(timeout, delay)
        expired = acc.expired_batches(now)
        self._expire_in_flight(now, expired)
        for b in expired:
            self._complete(b, -1, -1, KafkaTimeoutError(
                f"{b.record_count} records for {b.topic}-{b.partition} expired after "
                f"{(now - b.created) * 1000:.0f} ms (delivery.timeout.ms="
                f"{int(self.delivery_timeout * 1000)}) without an acknowledgement"), now)
        if check.unknown_leader_topics and not nodes:
            timeout = min(timeout, self.backoff)
        if not nodes:
            return timeout
        drained = acc.drain(md, nodes, self.max_request_size, now)
        for node, batches in drained.items():
            self._send_produce(node, batches, now)
        return 0.0 if drained else timeout

    def _send_produce(self, node: int, batches: list, now: float) -> None:
        version = self.network.api_version_for(node, "Produce")
        if version is None or version < MIN_PRODUCE_VERSION:
            err = error_for_code(ErrorCode.UNSUPPORTED_VERSION,
                                 f"broker node {node} cannot take record batch v2 (Produce v3+);"
                                 " gregor's producer needs Kafka 0.11 or newer")
            for b in batches:
                self._after_response(b)
                self._complete(b, -1, -1, err, now)
            return
        topics: dict[str, list] = {}
        touch = self.metadata.touch    # records flow: the topic is not idle
        for b in batches:
            topics.setdefault(b.topic, []).append({"index": b.partition, "records": b.data})
            self.metrics.batch_sent(b, now)
            touch(b.topic, now)
        body = {"transactional_id": self.transactional_id, "acks": self.acks,
                "timeout_ms": self.request_timeout_ms,
                "topic_data": [{"name": t, "partition_data": pd} for t, pd in topics.items()]}
        if self.acks == 0:
            self.network.send(node, "Produce", body, version, expect_response=False, now=now)
            for b in batches:
                self._after_response(b)
                self._complete(b, -1, -1, None, now)
            return
        req = self.network.send(node, "Produce", body, version, callback=self._on_response,
                                now=now)
        self.in_flight[id(req)] = batches

    # -- responses -----------------------------------------------------------------------------
    def _on_response(self, req) -> None:
        batches = self.in_flight.pop(id(req), None)
        if batches is None:
            return
        now = self.clock()
        self.metrics.requests += 1
        self.metrics.request_latency_total += now - req.send_time
        if req.error is not None:
            log.debug("produce request to node %s failed: %s", req.node_id, req.error)
            self.metadata.request_update()
            for b in batches:
                first = self._after_response(b)
                self._retry_or_fail(b, req.error, True, now, first, None)
            return
        parts = {}
        for tr in req.body.get("responses") or []:
            for pr in tr.get("partition_responses") or []:
                parts[(tr["name"], pr["index"])] = pr
        for b in batches:
            first = self._after_response(b)
            pr = parts.get((b.topic, b.partition))
            if pr is None:
                self._retry_or_fail(b, KafkaConnectionError(
                    f"broker answered without {b.topic}-{b.partition}"), True, now, first, None)
                continue
            code = pr["error_code"]
            if code == 0 or code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER:
                self._complete(b, pr["base_offset"], pr.get("log_append_time_ms", -1), None, now)
            elif code == ErrorCode.MESSAGE_TOO_LARGE and b.record_count > 1:
                self._split(b, now)
            else:
                err = error_for_code(code, pr.get("error_message"))
                self._retry_or_fail(b, err, err.retriable, now, first, code)

    def _after_response(self, b) -> bool:
        """Bookkeeping common to every answered batch; True if it was first in flight."""
        if self.txn is None:
            return True
        first = self.txn.is_first_in_flight(b)
        self.txn.remove_in_flight(b)
        return first

    def _retry_or_fail(self, b, err, retriable, now, first_in_flight, code) -> None:
        if b.final:
            return
        txn = self.txn
        if txn is not None and code in _SEQUENCE_ERRORS:
            retriable = True
            if first_in_flight:
                txn.request_bump(f"{err.name} for {b.topic}-{b.partition}")
        elif txn is not None and code in (ErrorCode.INVALID_PRODUCER_EPOCH,
                                          ErrorCode.PRODUCER_FENCED):
            retriable = False
        in_time = now - b.created + self._backoff_for(b) < self.delivery_timeout
        if retriable and b.attempts < self.retries and in_time and not self.force_close:
            if code in _METADATA_ERRORS or code is None:
                self.metadata.request_update()
            self.metrics.records_retried += b.record_count
            log.debug("retrying %s-%s (attempt %d): %s", b.topic, b.partition, b.attempts + 1,
                      err)
            self.acc.reenqueue(b, now, self._backoff_for(b))
            self.network.wakeup()
            return
        if txn is not None and txn.transactional:
            txn.on_batch_failed(err, code)
        self._complete(b, -1, -1, err, now)

    def _backoff_for(self, b) -> float:
        # Exponential with +-20% jitter, capped by retry.backoff.max.ms (KIP-580).
        base = min(self.backoff * (2 ** min(b.attempts, 30)), self.backoff_max)
        return base * random.uniform(0.8, 1.2)

    def _complete(self, b, base_offset, log_append_time, err, now) -> None:
        if self.txn is not None:
            self.txn.on_settled(b)
        if b.complete(base_offset, log_append_time, err):
            if err is None:
                self.metrics.records_sent += b.record_count
            else:
                self.metrics.records_failed += b.record_count
            self.acc.deallocate(b)

    def _split(self, b, now) -> None:
        from .split import split_batch
        new_batches = split_batch(b, self.acc.batch_size)
        log.info("%s-%s: batch of %d records was too large for the broker; split into %d",
                 b.topic, b.partition, b.record_count, len(new_batches))
        self.acc.requeue_split(b, new_batches)
        if self.txn is not None:
            self.txn.on_settled(b)
            self.txn.sequence_reset_needed(b)

    # -- expiry, abort -----------------------------------------------------------------------
    def _expire_in_flight(self, now: float, out: list) -> None:
        limit = self.delivery_timeout
        for batches in self.in_flight.values():
            for b in batches:
                if not b.final and now - b.created >= limit:
                    out.append(b)
                    if self.txn is not None:
                        # The broker may or may not have it: the sequence state is unknown.
                        self.txn.request_bump(f"in-flight batch for {b.topic}-{b.partition} "
                                              "expired")

    def abort_all(self, err) -> None:
        now = self.clock()
        for b in self.acc.abort_undrained(err):
            self._complete(b, -1, -1, err, now)
        for batches in list(self.in_flight.values()):
            for b in batches:
                self._complete(b, -1, -1, err, now)
        self.in_flight.clear()
        for b in list(self.acc.incomplete):
            self._complete(b, -1, -1, err, now)

    # -- producer id ---------------------------------------------------------------------------
    def _maybe_init_producer_id(self, now: float) -> float:
        txn = self.txn
        if txn.state == idem.INITIALIZING or now < self._init_retry_at:
            return max(0.0, min(self._init_retry_at - now, 0.1)) or 0.1
        if txn.state == idem.BUMP_PENDING and self.in_flight:
            return self.request_timeout_ms / 1000.0  # wait for the requests in flight to come back first
        net = self.network
        node = net.least_loaded_node(now)
        if node is None or not net.ready(node, now):
            return max(net.time_to_next_attempt(now), 0.005)
        version = net.api_version_for(node, "InitProducerId")
        if version is None:
            if self.idempotence_explicit:
                txn.on_init_failed(error_for_code(
                    ErrorCode.UNSUPPORTED_VERSION, "the broker does not support InitProducerId; "
                    "set enable.idempotence=false to produce to it"), fatal=True)
            else:
                log.warning("broker has no InitProducerId: idempotence turned off")
                self.txn = self.acc.txn = None
            return 0.0
        body = txn.init_request(version, self.cfg["transaction.timeout.ms"])

        def done(req):
            if req.error is not None:
                txn.on_init_failed(req.error, fatal=False)
                self._init_retry_at = self.clock() + self.backoff
                return
            code = req.body["error_code"]
            if code:
                err = error_for_code(code)
                txn.on_init_failed(err, fatal=not err.retriable)
                self._init_retry_at = self.clock() + self.backoff
                return
            txn.on_init_response(req.body["producer_id"], req.body["producer_epoch"])
        net.send(node, "InitProducerId", body, version, callback=done, now=now)
        return self.request_timeout_ms / 1000.0

    # -- transactions (transactions.py holds the state; this sends its requests) ------------
    def _txn_step(self, now: float) -> float:
        txn = self.txn
        if txn.purge_requested:
            from .transactions import TransactionError
            txn.purge_requested = False
            err = TransactionError("the transaction was aborted before this record was sent",
                                   abortable=True)
            for b in self.acc.abort_undrained(err):
                self._complete(b, -1, -1, err, now)
        if self._txn_req is not None:
            return 0.1
        if now < self._init_retry_at:
            return self._init_retry_at - now
        req = txn.next_request(flushed=not self.acc.incomplete and not self.in_flight)
        if req is None:
            return 3600.0
        net = self.network
        key = txn.coordinator_key(req)
        node = txn.coordinators.get(key)
        if node is not None and self._coordinator_md is not None:
            version, until = self._coordinator_md
            if node not in self.metadata.brokers and self.metadata.version == version \
                    and now < until:
                txn.put_back(req)       # the metadata response wakes the poll
                return until - now
            self._coordinator_md = None
        if node is None or node not in self.metadata.brokers:
            txn.put_back(req)
            return self._find_coordinator(key, now)
        if not net.ready(node, now):
            txn.put_back(req)
            return max(net.connection_delay(node, now), 0.005)
        version = net.api_version_for(node, req.api)
        if version is not None:
            # AddPartitionsToTxn v4+ is the brokers' batched form (KIP-890): clients send v3
            version = min(version, _CLIENT_MAX_VERSION.get(req.api, version))
        if version is None:
            from .transactions import TransactionError
            txn.fatal(TransactionError(f"the broker does not support {req.api}: it cannot run "
                                       "transactions", fatal=True))
            return 0.0

        def done(r):
            self._txn_req = None
            if r.error is not None:
                txn.on_transport_error(req)
                self._init_retry_at = self.clock() + self.backoff
                return
            outcome = txn.on_response(req, r.body)
            if outcome in ("retry", "lookup"):
                # CONCURRENT_TRANSACTIONS clears within milliseconds: retry soon (as Java).
                self._init_retry_at = self.clock() + min(self.backoff, 0.02)
        self._txn_req = req
        net.send(node, req.api, req.body, version, callback=done, now=now)
        return self.request_timeout_ms / 1000.0

    def _find_coordinator(self, key: tuple[str, str], now: float) -> float:
        net = self.network
        node = net.least_loaded_node(now)
        if node is None or not net.ready(node, now):
            return max(net.time_to_next_attempt(now), 0.005)
        version = net.api_version_for(node, "FindCoordinator")
        kind, name = key
        key_type = 1 if kind == "txn" else 0
        if version is None or (key_type == 1 and version < 1):
            from .transactions import TransactionError
            self.txn.fatal(TransactionError("the broker cannot find transaction coordinators "
                                            "(FindCoordinator v1+)", fatal=True))
            return 0.0
        body = ({"key_type": key_type, "coordinator_keys": [name]} if version >= 4
                else {"key": name, "key_type": key_type})
        txn = self.txn

        def done(r):
            self._txn_req = None
            retry_at = self.clock() + self.backoff
            if r.error is not None:
                self._init_retry_at = retry_at
                return
            b = r.body
            c = b["coordinators"][0] if version >= 4 else b
            if c["error_code"]:
                log.debug("FindCoordinator for %s %r: %s", kind, name,
                          error_for_code(c["error_code"]).name)
                self._init_retry_at = retry_at
                return
            with txn.lock:
                txn.coordinators[key] = c["node_id"]
            if c["node_id"] not in self.metadata.brokers:
                # A new producer's first lookup: the bootstrap connection knows no node ids
                # yet. Go on as soon as the metadata brings the node's address, instead of
                # after retry.backoff.ms (which every transactional producer paid at start).
                self.metadata.request_update()
                self._coordinator_md = (self.metadata.version, retry_at)
        self._txn_req = ("FindCoordinator", key)
        net.send(node, "FindCoordinator", body, version, callback=done, now=now)
        return self.request_timeout_ms / 1000.0
