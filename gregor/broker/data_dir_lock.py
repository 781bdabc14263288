"""One broker per data directory: the `.lock` file Kafka keeps in each log directory.

Two brokers on one directory append to the same segments and each believes it owns them, so
acknowledged records are overwritten without an error. Kafka's LogManager takes an exclusive
lock on `<log.dir>/.lock` when it opens the directory and holds it until it closes; a second
broker fails to start. Here the lock is flock(2): held by an open file description, so a
second broker in the same process is refused too (a POSIX fcntl record lock would let it
through), and released by the kernel when the holder exits however it exits, so a broker
killed with kill -9 leaves nothing stale behind: the next start takes the lock over. The file
keeps the holder's pid (Kafka's is empty) so that the refusal can name the other process.
"""
from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_FILE = ".lock"
_PID_READ_LIMIT = 64           # a pid and a newline; never read more than that
_COMMAND_SHOWN = 160           # characters of the holder's command line in the message


class DataDirectoryInUse(RuntimeError):
    """Another process holds the data directory's lock."""

    def __init__(self, directory: Path, pid: int | None):
        self.directory, self.pid = directory, pid
        who = f"pid {pid}{_command_of(pid)}" if pid else "another process"
        super().__init__(
            f"data directory {directory} is in use by {who} (it holds {directory / LOCK_FILE}); "
            "stop that broker or give this one another --data-dir / log.dirs")


def _command_of(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()[:_COMMAND_SHOWN * 2]
    except OSError:
        return ""
    words = raw.decode("utf-8", "replace").split("\0")
    command = " ".join(w for w in words if w)[:_COMMAND_SHOWN]
    return f": {command}" if command else ""


class DataDirLock:
    """Held from acquire() to release(); acquire() raises DataDirectoryInUse."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        self.path = self.directory / LOCK_FILE
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> "DataDirLock":
        if self._fd is not None:
            return self
        self.directory.mkdir(parents=True, exist_ok=True)
        # os.open's descriptors are not inherited by child processes (PEP 446), so a worker
        # the broker starts never keeps the lock alive after the broker died.
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            raise DataDirectoryInUse(self.directory, pid) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.ftruncate(fd, 0)        # a clean exit leaves no pid behind
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, _PID_READ_LIMIT, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
