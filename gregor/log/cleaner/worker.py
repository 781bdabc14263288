"""Running a pass's heavy part in a worker process.

The cleaner's reading, hashing and filtering is Python code: on a thread it competes with the
event loop for the GIL, which shows in produce latency. In a worker process (one per cleaner
thread, started once as `python -c _BOOT`, which runs this module: forking a process with
running threads is not safe, and multiprocessing's spawn would re-import the embedding
program's main module) it runs on its own core, at idle priority and pausing whenever a
thread waits for a CPU (cleaner.py, Pacer). Requests and results are pickles framed by
an 8-byte length on the worker's stdin and stdout. The worker gets a picklable description of the pass (paths,
sizes, the snapshot's transaction and producer facts), writes every cleaned group's `.cleaned`
files, and returns what it wrote; the broker then opens and swaps each group in on the event
loop exactly as a thread pass does. The worker dies with the broker (PR_SET_PDEATHSIG on
Linux), so a killed broker leaves no process writing into its directories.
"""
from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys
from dataclasses import dataclass

from ..segment import Segment
from .cleaner import CleanPass, Pacer, SegmentView, Snapshot, cpu_wanted
from .offset_map import OffsetMap
from .swap import CLEANED

_MAP: OffsetMap | None = None          # the worker's map, kept between passes
# Descriptors of the last pass's segments, held until the broker has swapped the cleaned ones
# in and closed its own (WorkerProcess.release): the last close of a replaced segment's file
# frees its pages and blocks (~1 ms of kernel CPU per 8 MiB, more with online discard), and
# the last one is then the worker's, at idle priority, not the broker's cleaner thread's.
_HELD: list[int] = []
_RELEASE = "release"


@dataclass
class PassSpec:
    directory: str
    config: object
    first_dirty: int
    first_uncleanable: int
    segments: list[tuple]          # (base, next_offset, size, max_timestamp, txn entries)
    aborted: list
    producer_last: dict
    now_ms: int
    buffer_bytes: int
    io_rate: float


def spec_of(snap: Snapshot, buffer_bytes: int, io_rate: float) -> PassSpec:
    return PassSpec(snap.directory, snap.config, snap.first_dirty, snap.first_uncleanable,
                    [(v.base_offset, v.next_offset, v.size, v.max_timestamp, v.txn_entries)
                     for v in snap.views], snap.aborted, snap.producer_last, snap.now_ms,
                    buffer_bytes, io_rate)


def init_worker() -> None:
    """Make the worker die with the parent (Linux only; elsewhere a stray worker only writes
    .cleaned files, which recovery removes). Its CPU priority was lowered by _BOOT before
    anything was imported."""
    try:
        import ctypes
        import signal
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)            # PR_SET_PDEATHSIG
        if os.getppid() == 1:
            os._exit(0)
    except (OSError, AttributeError):
        pass


def run_spec(spec: PassSpec):
    """In the worker: the pass up to durable `.cleaned` files. Returns (stats, [group bases
    in order, each a list of the replaced segments' base offsets])."""
    global _MAP
    from .throttle import Throttler
    if _MAP is None or _MAP.capacity != OffsetMap(spec.buffer_bytes).capacity:
        _MAP = OffsetMap(spec.buffer_bytes)
    views = []
    try:
        for base, nxt, size, max_ts, txn in spec.segments:
            path = os.path.join(spec.directory, f"{base:020d}.log")
            views.append(SegmentView(None, base, nxt, size, os.open(path, os.O_RDONLY), max_ts,
                                     txn))
    except FileNotFoundError:
        for v in views:
            os.close(v.fd)
        return None, []             # retention removed a segment meanwhile: try again later
    release_held()
    _HELD.extend(os.dup(v.fd) for v in views)
    snap = Snapshot(spec.directory, spec.config, spec.first_dirty, spec.first_uncleanable,
                    views, spec.aborted, spec.producer_last, spec.now_ms)
    written = []

    def keep(group, new):
        new.close()
        written.append([v.base_offset for v in group])
        return True
    throttle = Throttler(spec.io_rate)
    wanted = cpu_wanted()
    try:
        stats = CleanPass(snap, _MAP, throttle=throttle, shares_gil=False,
                          pace=Pacer(wanted=wanted)).run(keep)
    finally:
        if wanted is not None:
            wanted.close()
    return stats, written


def release_held() -> None:
    while _HELD:
        try:
            os.close(_HELD.pop())
        except OSError:
            pass


def open_cleaned(directory: str, base: int, config) -> Segment | None:
    """In the broker: the segment a worker wrote, ready to be swapped in; None when its
    files do not check out (the group is then not swapped)."""
    seg = Segment(directory, base, index_interval=config.index_interval_bytes,
                  max_index_entries=config.max_index_entries, now_ms=0, suffix=CLEANED)
    seg.allow_gaps = True
    try:
        seg.load_indexes()
    except Exception:                   # index files are a cache: rebuild them from the log
        if seg.recover(expected_offset=base).error is not None:
            seg.close()
            return None
    seg.seal()
    return seg


_LEN = struct.Struct(">Q")

# How the worker is started: its priority is lowered before anything is imported (importing
# numpy and gregor costs ~0.2 s of CPU, which at normal priority competes with the broker's
# event loop; measured as produce stalls of 2-7 ms in the first pass after a start), then the
# worker module runs. Threads started later inherit SCHED_IDLE.
_BOOT = """\
import os
try:
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
except (OSError, AttributeError):
    try:
        os.nice(10)
    except (OSError, AttributeError):
        pass
import runpy
runpy.run_module("gregor.log.cleaner.worker", run_name="__main__", alter_sys=True)
"""

# numpy's BLAS would start a helper thread per core that spins while it waits for work (the
# cleaner never calls BLAS): one thread, the worker's own
_ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


class WorkerGone(RuntimeError):
    """The worker process exited (killed by stop(), or it crashed)."""


class WorkerProcess:
    """One worker process, started on first use, restarted when it died."""

    def __init__(self):
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        """Start the worker unless it runs (the cleaner thread starts it when the broker starts,
        so that its start-up is not part of the first pass)."""
        if self.proc is not None and self.proc.poll() is None:
            return
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))))
        env = dict(os.environ)
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        env.update(_ONE_THREAD)
        self.proc = subprocess.Popen([sys.executable, "-c", _BOOT],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)

    def run(self, spec: PassSpec):
        self.start()
        data = pickle.dumps(spec, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self.proc.stdin.write(_LEN.pack(len(data)) + data)
            self.proc.stdin.flush()
            head = _read_exactly(self.proc.stdout, _LEN.size)
            out = pickle.loads(_read_exactly(self.proc.stdout, _LEN.unpack(head)[0]))
        except (OSError, EOFError) as e:
            raise WorkerGone(f"cleaner worker exited: {e}") from None
        if isinstance(out, Exception):
            raise out
        return out

    def release(self) -> None:
        """Let the worker close the last pass's segment files (after the broker swapped the
        cleaned ones in and closed its own): the freeing is done at the worker's priority."""
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            self.run(_RELEASE)
        except WorkerGone:
            pass

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _read_exactly(f, n: int) -> bytes:
    out = f.read(n)
    if out is None or len(out) < n:
        raise EOFError("end of stream")
    return out


def main() -> None:
    init_worker()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            head = _read_exactly(stdin, _LEN.size)
        except EOFError:
            return
        spec = pickle.loads(_read_exactly(stdin, _LEN.unpack(head)[0]))
        try:
            if spec == _RELEASE:
                release_held()
                out = None
            else:
                out = run_spec(spec)
        except Exception as e:          # handed to the broker, which names the partition
            out = RuntimeError(f"{type(e).__name__}: {e}")
        result = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
        stdout.write(_LEN.pack(len(result)) + result)
        stdout.flush()


if __name__ == "__main__":
    main()
