"""fsync work that can leave the log's thread: a SyncTicket.

The log is driven from one thread (the broker's event loop), but an fsync can take
milliseconds. `Log.begin_sync()` captures, on that thread, duplicates of the file descriptors
that may hold unflushed data plus the offset they cover; `ticket.run()` fsyncs them on any
thread (an executor), and `Log.finish_sync(ticket)` back on the log's thread moves the recovery
point. Duplicated descriptors stay valid even if the log rolls, deletes or closes the originals
meanwhile, so no lock is needed. Rolled segments are flushed the same way, in a daemon thread.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field


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
