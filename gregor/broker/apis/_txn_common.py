"""What the transaction API handlers share: finding the coordinator and converting errors for
old request versions."""
from __future__ import annotations

import asyncio

from ...protocol.errors import ErrorCode

E = ErrorCode


def coordinator(broker):
    """The broker's transaction coordinator, or None when it has none (yet)."""
    return getattr(broker, "txn_coordinator", None)


def fenced_for(version: int, first_version_with_90: int):
    """A converter of PRODUCER_FENCED (90) to INVALID_PRODUCER_EPOCH (47) for requests older
    than the version that introduced 90: clients of those versions only know 47."""
    def convert(code: int) -> int:
        if code == E.PRODUCER_FENCED and version < first_version_with_90:
            return E.INVALID_PRODUCER_EPOCH
        return code
    return convert


def respond_later(coro, build):
    """Run the coordinator coroutine and answer with build(result) when it finishes."""
    task = asyncio.ensure_future(coro)
    fut = asyncio.get_running_loop().create_future()

    def done(t: asyncio.Future) -> None:
        if fut.done():
            return
        if t.cancelled():
            fut.set_result(build(None))
        elif t.exception() is not None:
            fut.set_exception(t.exception())
        else:
            fut.set_result(build(t.result()))
    task.add_done_callback(done)
    return fut
