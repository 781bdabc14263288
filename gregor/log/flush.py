"""fsync work that can leave the log's thread: a SyncTicket.

The log is driven from one thread (the broker's event loop), but an fsync can take
milliseconds. `Log.begin_sync()` captures, on that thread, duplicates of the file descriptors
that may hold unflushed data plus the offset they cover; `ticket.run()` fsyncs them on any
thread (an executor), and `Log.finish_sync(ticket)` back on the log's thread moves the recovery
point. Duplicated descriptors stay valid even if the log rolls, deletes or closes the originals
meanwhile, so no lock is needed. Rolled segments are flushed the same way, on one thread
shared by every log (`roll_flusher()`).
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

_roll_flusher: ThreadPoolExecutor | None = None
_roll_flusher_lock = threading.Lock()


def roll_flusher() -> ThreadPoolExecutor:
    """The thread that fsyncs rolled segments, for every log of the process. Handing it work
    costs the caller a queue put; starting a thread per roll, as before, held the event loop
    until the new thread had first run (0.6-2.3 ms, measured under load)."""
    global _roll_flusher
    with _roll_flusher_lock:
        if _roll_flusher is None:
            _roll_flusher = ThreadPoolExecutor(1, thread_name_prefix="gregor-log-flush")
        return _roll_flusher


@dataclass
class SyncTicket:
    offset: int                     # everything below it is durable once run() returned
    generation: int                 # the log's truncation count when the ticket was taken
    fds: list[int] = field(default_factory=list)

    def run(self) -> None:
        """fsync every captured descriptor, then close them. Raises OSError when the disk
        fails (the data may not be durable: answer KAFKA_STORAGE_ERROR, and do not call
        finish_sync)."""
        fds, self.fds = self.fds, []
        try:
            for fd in fds:
                os.fsync(fd)
        finally:
            for fd in fds:
                os.close(fd)

    def discard(self) -> None:
        fds, self.fds = self.fds, []
        for fd in fds:
            os.close(fd)


def dup_dir_fd(directory: str) -> int:
    """A descriptor of the directory itself: fsyncing it makes new file names durable."""
    return os.open(directory, os.O_RDONLY)
