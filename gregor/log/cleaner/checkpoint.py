"""`cleaner-offset-checkpoint`: per log directory, where each partition's dirty section
starts. Kafka's text format: a version line (0), a count line, then one
`<topic> <partition> <offset>` line per partition (gregor/log/offset_checkpoint.py). A missing or unreadable file only means
more cleaning (every log starts dirty from its start), never less.
"""
from __future__ import annotations

import logging
import os

from ..offset_checkpoint import VERSION, read_offsets, write_offsets  # noqa: F401

log = logging.getLogger("gregor.log.cleaner")

FILE_NAME = "cleaner-offset-checkpoint"


def read_checkpoints(directory) -> dict[tuple[str, int], int]:
    path = os.path.join(os.fspath(directory), FILE_NAME)
    try:
        return read_offsets(path)
    except ValueError as e:
        log.warning("%s is unreadable (%s); every compacted log is treated as dirty", path, e)
        return {}


def write_checkpoints(directory, offsets: dict[tuple[str, int], int]) -> None:
    write_offsets(os.path.join(os.fspath(directory), FILE_NAME), offsets)
