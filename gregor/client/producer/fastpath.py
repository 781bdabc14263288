"""The compiled send() fast path (_fastpath.pyx) when it was built, else None (see
gregor/compiled.py)."""
from __future__ import annotations

import threading

from ...compiled import load

_mod = load("gregor.client.producer._fastpath")
FastLock = _mod.FastLock if _mod else None
FastSend = _mod.FastSend if _mod else None
murmur2 = _mod.murmur2 if _mod else None

if _mod is not None:
    FutureCore = _mod.FutureCore
else:
    class FutureCore:
        """The two fields of a record's future (batch.FutureRecordMetadata adds the methods)."""
        __slots__ = ("_result", "_index")


def new_lock():
    """The accumulator's lock: the compiled path's own when built (it takes it without a
    Python call), else threading.Lock."""
    return FastLock() if FastLock is not None else threading.Lock()
