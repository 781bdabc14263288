import asyncio

from gregor.broker.purgatory import DelayedOperation, Purgatory


class Op(DelayedOperation):
    def __init__(self, timeout_ms, state):
        super().__init__(timeout_ms)
        self.state = state
        self.result = None
        self.expired = False

    def try_complete(self):
        if self.state["ready"]:
            return self.force_complete()
        return False

    def on_expiration(self):
        self.expired = True

    def on_complete(self):
        self.result = "expired" if self.expired else "done"


def run(coro):
    return asyncio.run(coro)


def test_completes_at_once_when_ready():
    async def main():
        p = Purgatory("t")
        op = Op(1000, {"ready": True})
        assert p.try_complete_else_watch(op, ["a"])
        assert op.result == "done" and p.delayed() == 0 and p.watched() == 0
    run(main())


def test_waits_until_a_watched_key_is_checked():
    async def main():
        p = Purgatory("t")
        state = {"ready": False}
        op = Op(10_000, state)
        assert not p.try_complete_else_watch(op, ["a", "b"])
        assert p.delayed() == 1 and p.watched() == 2
        assert p.check_and_complete("a") == 0         # condition still false
        state["ready"] = True
        assert p.check_and_complete("c") == 0         # unrelated key
        assert op.result is None
        assert p.check_and_complete("b") == 1
        assert op.result == "done"
        # completed operations leave every key's list, not only the one that completed them
        assert p.delayed() == 0 and p.watched() == 0
    run(main())


def test_times_out_and_expires_exactly_once():
    async def main():
        p = Purgatory("t")
        op = Op(20, {"ready": False})
        p.try_complete_else_watch(op, ["a"])
        await asyncio.sleep(0.2)
        assert op.expired and op.result == "expired"
        assert p.expired == 1 and p.delayed() == 0 and p.watched() == 0
        assert not op.force_complete()
    run(main())


def test_completion_cancels_the_timer():
    async def main():
        p = Purgatory("t")
        state = {"ready": False}
        op = Op(50, state)
        p.try_complete_else_watch(op, ["a"])
        state["ready"] = True
        p.check_and_complete("a")
        await asyncio.sleep(0.15)
        assert op.result == "done" and not op.expired and p.expired == 0
    run(main())


def test_complete_all_forces_waiters():
    async def main():
        p = Purgatory("t")
        ops = [Op(10_000, {"ready": False}) for _ in range(3)]
        for i, op in enumerate(ops):
            p.try_complete_else_watch(op, [i % 2])
        assert p.delayed() == 3
        assert p.complete_all() == 3
        assert all(op.result == "done" for op in ops) and p.delayed() == 0
    run(main())


def test_zero_timeout_expires_immediately():
    async def main():
        p = Purgatory("t")
        op = Op(0, {"ready": False})
        assert not p.try_complete_else_watch(op, ["a"])
        assert op.result == "expired" and p.watched() == 0
    run(main())


def test_idle_keys_do_not_keep_expired_operations():
    async def main():
        p = Purgatory("t")
        for _ in range(50):
            p.try_complete_else_watch(Op(1, {"ready": False}), ["idle"])
        await asyncio.sleep(0.1)
        assert p.watched() == 0 and p.delayed() == 0 and p.expired == 50
    run(main())


def test_a_produce_forced_at_shutdown_before_its_commit_is_not_a_success():
    """DelayedProduce: completing what is committed, the rest REQUEST_TIMED_OUT, never a
    success for a write the ISR may not have (as Kafka's DelayedProduce)."""
    from types import SimpleNamespace

    from gregor.broker.apis.produce import DelayedProduce, PartitionResult
    from gregor.protocol.errors import ErrorCode

    class Part:
        def __init__(self, hw):
            self.hw = hw

        def check_enough_replicas_reach_offset(self, offset):
            return (self.hw >= offset, ErrorCode.NONE)

    async def main():
        parts = {("t", 0): Part(hw=10), ("t", 1): Part(hw=3)}
        errors = []
        broker = SimpleNamespace(replica_manager=SimpleNamespace(
            get=lambda t, p: parts[(t, p)]), metrics=SimpleNamespace(
            error=lambda key, name: errors.append(name)))
        results = []
        for p in (0, 1):
            r = PartitionResult("t", p)
            r.base_offset, r.last_offset, r.pending = 5, 9, True
            results.append(r)
        fut = asyncio.get_running_loop().create_future()
        purgatory = Purgatory("produce")
        op = DelayedProduce(30_000, broker, results, 8, fut)
        assert not purgatory.try_complete_else_watch(op, [("t", 0), ("t", 1)])
        assert purgatory.complete_all() == 1
        codes = {pr["index"]: (pr["error_code"], pr["base_offset"])
                 for t in fut.result()["responses"] for pr in t["partition_responses"]}
        assert codes == {0: (ErrorCode.NONE, 5), 1: (ErrorCode.REQUEST_TIMED_OUT, -1)}
        assert errors == ["REQUEST_TIMED_OUT"]
    run(main())
