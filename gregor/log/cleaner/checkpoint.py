"""`cleaner-offset-checkpoint`: per log directory, where each partition's dirty section
starts. Kafka's text format: a version line (0), a count line, then one
`<topic> <partition> <offset>` line per partition. Written to a temporary file, fsynced and
renamed, so a crash leaves the old or the new file. A missing or unreadable file only means
more cleaning (every log starts dirty from its start), never less.
"""
from __future__ import annotations

import logging
import os

log = logging.getLogger("gregor.log.cleaner")

FILE_NAME = "cleaner-offset-checkpoint"
VERSION = 0


def read_checkpoints(directory) -> dict[tuple[str, int], int]:
    path = os.path.join(os.fspath(directory), FILE_NAME)
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return {}
    try:
        if int(lines[0]) != VERSION:
            raise ValueError(f"version {lines[0]}")
        count = int(lines[1])
        out = {}
        for line in lines[2:2 + count]:
            topic, partition, offset = line.rsplit(" ", 2)
            out[(topic, int(partition))] = int(offset)
        if len(out) != count:
            raise ValueError(f"{count} entries announced, {len(out)} found")
        return out
    except (ValueError, IndexError) as e:
        log.warning("%s is unreadable (%s); every compacted log is treated as dirty", path, e)
        return {}


def write_checkpoints(directory, offsets: dict[tuple[str, int], int]) -> None:
    directory = os.fspath(directory)
    path = os.path.join(directory, FILE_NAME)
    tmp = path + ".tmp"
    lines = [str(VERSION), str(len(offsets))]
    lines += [f"{t} {p} {o}" for (t, p), o in sorted(offsets.items())]
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
