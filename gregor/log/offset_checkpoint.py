"""Kafka's offset checkpoint files (`cleaner-offset-checkpoint`, `replication-offset-checkpoint`):
a version line (0), a count line, then one `<topic> <partition> <offset>` line per partition.
Written to a temporary file, fsynced and renamed, so a crash leaves the old or the new file.
"""
from __future__ import annotations

import os

VERSION = 0


def read_offsets(path) -> dict[tuple[str, int], int] | None:
    """The file's offsets; {} when it is missing; raises ValueError when it is unreadable."""
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
    except IndexError as e:
        raise ValueError(f"truncated ({e})") from None
    if len(out) != count:
        raise ValueError(f"{count} entries announced, {len(out)} found")
    return out


def write_offsets(path, offsets: dict[tuple[str, int], int]) -> None:
    path = os.fspath(path)
    tmp = path + ".tmp"
    lines = [str(VERSION), str(len(offsets))]
    lines += [f"{t} {p} {o}" for (t, p), o in sorted(offsets.items())]
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
