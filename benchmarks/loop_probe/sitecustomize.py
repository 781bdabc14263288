"""Event-loop lag probe for benchmarks (bench_compaction.py --loop-probe): imported at start-up
of a process whose PYTHONPATH starts with this directory. When GREGOR_LOOP_PROBE names a file,
the first event loop set running in the process gets a probe thread: every PERIOD seconds it
hands the loop a callback with call_soon_threadsafe and records how long the loop took to run
it (the wait a request's read callback would see: the loop's own work, the GIL, the CPU).
Records "monotonic_time lag_seconds" lines to that file. The variable is removed from the
environment so that child processes (the cleaner's worker) do not probe.
"""
import os

_path = os.environ.pop("GREGOR_LOOP_PROBE", None)
if _path:
    import asyncio
    import asyncio.events
    import threading
    import time

    PERIOD = 0.002
    _orig = asyncio.events._set_running_loop
    _started = []

    def _probe(loop):
        out = open(_path, "a", buffering=1 << 16)
        rec = []

        def cb(t0):
            rec.append((t0, time.monotonic() - t0))
        last_flush = time.monotonic()
        while not loop.is_closed():
            try:
                loop.call_soon_threadsafe(cb, time.monotonic())
            except RuntimeError:
                break
            time.sleep(PERIOD)
            now = time.monotonic()
            if now - last_flush > 0.5:
                batch, rec[:] = rec[:], []
                out.write("".join(f"{t:.6f} {lag:.6f}\n" for t, lag in batch))
                out.flush()
                last_flush = now

    def _set_running_loop(loop):
        _orig(loop)
        if loop is not None and not _started:
            _started.append(loop)
            threading.Thread(target=_probe, args=(loop,), daemon=True,
                             name="loop-probe").start()

    asyncio.events._set_running_loop = _set_running_loop
    asyncio._set_running_loop = _set_running_loop     # uvloop takes it from here
