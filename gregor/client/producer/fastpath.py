"""The compiled send() fast path (_fastpath.pyx) when it was built, else None.

`make venv` builds it (Cython and a C compiler); without it everything works in Python, only
slower. GREGOR_PURE_PYTHON=1 in the environment ignores a built module (tests use it to run
the Python path)."""
from __future__ import annotations

import os
import threading

FastLock = FastSend = FutureCore = murmur2 = None
if not os.environ.get("GREGOR_PURE_PYTHON"):
    try:
        from ._fastpath import FastLock, FastSend, FutureCore, murmur2  # noqa: F811
    except ImportError:  # not built
        pass

if FutureCore is None:
    class FutureCore:
        """The two fields of a record's future (batch.FutureRecordMetadata adds the methods)."""
        __slots__ = ("_result", "_index")


def new_lock():
    """The accumulator's lock: the compiled path's own when built (it takes it without a
    Python call), else threading.Lock."""
    return FastLock() if FastLock is not None else threading.Lock()
