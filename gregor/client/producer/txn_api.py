"""The producer's transactional methods (confluent-kafka's and Java's names), over the state in
transactions.py. Mixed into Producer; they need a `transactional.id`."""
from __future__ import annotations

from ..errors import ConfigError
from .transactions import TransactionError, TransactionManager


def _offsets(offsets) -> list[tuple[str, int, int, str | None]]:
    """(topic, partition, offset, metadata) from confluent-kafka TopicPartitions, a
    {(topic, partition): offset or (offset, metadata)} dict, or tuples."""
    out = []
    items = offsets.items() if isinstance(offsets, dict) else ((o, None) for o in offsets)
    for k, v in items:
        if v is not None:
            topic, partition = k
            off, meta = v if isinstance(v, tuple) else (getattr(v, "offset", v),
                                                        getattr(v, "metadata", None))
        elif isinstance(k, tuple):
            topic, partition, off = k[:3]
            meta = k[3] if len(k) > 3 else None
        else:
            topic, partition, off = k.topic, k.partition, k.offset
            meta = getattr(k, "metadata", None)
        out.append((topic, int(partition), int(off), meta))
    return out


def _group(meta) -> dict:
    """The consumer's group metadata: a dict, or an object with group_id/generation_id/
    member_id/group_instance_id (gregor's and Java's), or a bare group id string."""
    if isinstance(meta, str):
        return {"group_id": meta, "generation_id": -1, "member_id": "",
                "group_instance_id": None}
    if isinstance(meta, dict):
        return {"generation_id": -1, "member_id": "", "group_instance_id": None, **meta}
    return {"group_id": meta.group_id,
            "generation_id": getattr(meta, "generation_id", -1),
            "member_id": getattr(meta, "member_id", "") or "",
            "group_instance_id": getattr(meta, "group_instance_id", None)}


class TransactionalMethods:
    _txn = None

    def _init_transactional_send(self, send) -> None:
        """Records may only be sent inside a transaction. Rather than a state check in every
        send() (the compiled fast path has none), send is switched: the plain one between
        begin_transaction() and the start of commit/abort, a checking one otherwise."""
        check = self._txn.check_can_send

        def gated(*args, **kwargs):
            check()
            return send(*args, **kwargs)
        self._open_send, self._gated_send = send, gated
        self.send = self.produce = gated

    def _gate(self, open_: bool) -> None:
        if not self._closed:
            self.send = self.produce = self._open_send if open_ else self._gated_send

    def _txn_manager(self) -> TransactionManager:
        txn = self._txn
        if not isinstance(txn, TransactionManager):
            raise ConfigError("transactions need config 'transactional.id'")
        return txn

    def _timeout(self, timeout):
        return self._max_block if timeout is None else timeout

    def init_transactions(self, timeout: float | None = None) -> None:
        """Register the transactional id with its coordinator (fencing older producers of
        the same id, and aborting a transaction they left open)."""
        txn = self._txn_manager()
        r = txn.init_transactions()
        self._network.wakeup()
        r.wait(self._timeout(timeout), "init_transactions()")

    def begin_transaction(self) -> None:
        self._txn_manager().begin_transaction()
        self._gate(True)

    def send_offsets_to_transaction(self, offsets, group_metadata,
                                    timeout: float | None = None) -> None:
        """Commit the consumer's positions with the transaction (consume-transform-produce).
        `offsets`: the next offsets to consume."""
        txn = self._txn_manager()
        r = txn.send_offsets(_offsets(offsets), _group(group_metadata))
        self._network.wakeup()
        r.wait(self._timeout(timeout), "send_offsets_to_transaction()")

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Send everything queued, then commit. An abortable error raises TransactionError
        with .abortable: call abort_transaction()."""
        txn = self._txn_manager()
        if txn.txn_state == "abortable_error":
            raise txn.txn_error
        self._gate(False)
        try:
            self.flush(self._timeout(timeout))
        except BaseException:
            if txn.txn_state == "in_transaction":
                self._gate(True)        # a timed-out flush: the transaction goes on
            raise
        r = txn.begin_commit()
        self._network.wakeup()
        r.wait(self._timeout(timeout), "commit_transaction()")

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Drop records not yet sent, wait for those in flight, then abort."""
        txn = self._txn_manager()
        self._gate(False)
        r = txn.begin_abort()
        self._network.wakeup()
        r.wait(self._timeout(timeout), "abort_transaction()")


__all__ = ["TransactionalMethods", "TransactionError"]
