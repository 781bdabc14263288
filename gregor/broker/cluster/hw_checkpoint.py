"""`replication-offset-checkpoint`: each partition's high watermark, saved per data directory
(Kafka's offset checkpoint format, gregor/log/offset_checkpoint.py).

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

from ...log.offset_checkpoint import read_offsets, write_offsets

log = logging.getLogger("gregor.broker.cluster")

FILE_NAME = "replication-offset-checkpoint"


def read(data_dir: Path) -> dict[tuple[str, int], int]:
    path = Path(data_dir) / FILE_NAME
    try:
        return read_offsets(path)
    except (ValueError, OSError) as e:
        log.warning("%s is unreadable (%s); high watermarks start at the log ends", path, e)
        return {}


def write(data_dir: Path, hws: dict[tuple[str, int], int]) -> None:
    write_offsets(Path(data_dir) / FILE_NAME, hws)
