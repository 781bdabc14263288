"""`replication-offset-checkpoint`: each partition's high watermark, saved per data directory
(Kafka's text format: a version line 0, a count line, then `topic partition offset` lines).

In a cluster a broker's log may end past what was committed (records a follower fetched that
the leader never committed, a leader's tail no follower had). After a restart the high
watermark starts from this file instead of the log end, so a follower that must fall back to
truncating at its high watermark (no common leader epoch, see replica_fetcher.py) cuts at what
was known committed. Written every replica.high.watermark.checkpoint.interval.ms and at a clean
stop, through a temporary file and a rename (fsynced: a torn file would be worse than an old
one). A missing or unreadable file leaves the high watermark at the log end, as before.
"""
from __future__ import annotations

import logging
from pathlib import Path

from ..topics import write_atomically

log = logging.getLogger("gregor.broker.cluster")

FILE_NAME = "replication-offset-checkpoint"


def read(data_dir: Path) -> dict[tuple[str, int], int]:
    path = Path(data_dir) / FILE_NAME
    try:
        lines = path.read_text().split("\n")
    except OSError:
        return {}
    try:
        if lines[0].strip() != "0":
            raise ValueError(f"version {lines[0]!r}")
        count = int(lines[1])
        out = {}
        for line in lines[2:2 + count]:
            topic, partition, offset = line.rsplit(" ", 2)
            out[(topic, int(partition))] = int(offset)
        if len(out) != count:
            raise ValueError(f"{len(out)} entries, header says {count}")
        return out
    except (ValueError, IndexError) as e:
        log.warning("%s is unreadable (%s); high watermarks start at the log ends", path, e)
        return {}


def encode(hws: dict[tuple[str, int], int]) -> bytes:
    lines = [f"{t} {p} {o}" for (t, p), o in sorted(hws.items())]
    return ("0\n" + f"{len(lines)}\n" + "".join(line + "\n" for line in lines)).encode()


def write(data_dir: Path, hws: dict[tuple[str, int], int]) -> None:
    write_atomically(Path(data_dir) / FILE_NAME, encode(hws))
