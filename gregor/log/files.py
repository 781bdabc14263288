"""The small files beside a partition's segments, and making a directory's entries durable.

Shared by recovery (which reads them) and the cleaner's segment swaps (which write them), so
neither needs the other for these.
"""
from __future__ import annotations

import os

CLEAN_SHUTDOWN_FILE = "clean-shutdown"
RECOVERY_POINT_FILE = "recovery-point"
LOG_START_OFFSET_FILE = "log-start-offset"
# Written by the first cleaning of a log: from then on gaps between batches are expected,
# even if the topic's cleanup.policy later becomes delete.
COMPACTED_FILE = "compacted"


def fsync_dir(directory: str) -> None:
    """fsync a directory: a file created, renamed or deleted in it survives a crash."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
