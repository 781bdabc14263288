"""The leader epoch cache of one partition (KIP-101): which leader epoch began at which offset.

Every batch a leader appends carries its leader epoch (partition_leader_epoch in the batch
header); the first batch of a new epoch adds an entry (epoch, start offset). A follower that
comes back asks the leader where its own latest epoch ended (OffsetForLeaderEpoch) and truncates
its log there, instead of to its high watermark, which lost acknowledged records in the
failovers KIP-101 describes.

Kept in `leader-epoch-checkpoint` in the partition directory, Kafka's text format: a version
line (0), a count line, then one `epoch start_offset` line per entry. Written whenever an entry
is added or entries are dropped (once per leader change, never per append) through a temporary
file and a rename, without an fsync: the event loop never waits on the disk for it, and a file
lost to a power failure reads as empty, which costs only precision (a follower without entries
truncates to its high watermark, as before KIP-101), never a wrong answer.
"""
from __future__ import annotations

import os
from pathlib import Path

FILE_NAME = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


class LeaderEpochCache:
    def __init__(self, directory: str | os.PathLike | None):
        self.path = Path(directory) / FILE_NAME if directory is not None else None
        self.entries: list[tuple[int, int]] = []       # (epoch, start offset), both ascending
        if self.path is not None and self.path.exists():
            self.entries = _parse(self.path.read_text())

    @property
    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Epoch `epoch` begins at start_offset (its first batch). Older or equal epochs
        and negative ones (batches no leader stamped) change nothing. True if added."""
        if epoch < 0 or (self.entries and epoch <= self.entries[-1][0]):
            return False
        # An entry starting at or after this one can only come from a log truncated below it
        # without the cache being told; the new epoch supersedes them.
        while self.entries and self.entries[-1][1] >= start_offset:
            self.entries.pop()
        self.entries.append((epoch, start_offset))
        self._save()
        return True

    def end_offset_for(self, requested: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) as the leader answers OffsetForLeaderEpoch: for the latest epoch
        the log end; otherwise the start of the first epoch above the requested one, paired
        with the largest epoch at or below it. (-1, -1) when the requested epoch is older than
        every entry or undefined."""
        if requested == UNDEFINED_EPOCH or not self.entries:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if requested == self.entries[-1][0]:
            return requested, log_end_offset
        floor = None
        for epoch, start in self.entries:
            if epoch > requested:
                if floor is None:
                    return UNDEFINED_EPOCH, UNDEFINED_OFFSET
                return floor, start
            floor = epoch
        # the requested epoch is newer than ours: the latest epoch ends at the log end
        return self.entries[-1][0], log_end_offset

    def start_offset_of_latest(self) -> int:
        return self.entries[-1][1] if self.entries else UNDEFINED_OFFSET

    def truncate_from_end(self, end_offset: int) -> None:
        """The log now ends at end_offset: entries starting at or after it are gone."""
        keep = [e for e in self.entries if e[1] < end_offset]
        if len(keep) != len(self.entries):
            self.entries = keep
            self._save()

    def clear(self) -> None:
        if self.entries:
            self.entries = []
            self._save()

    def _save(self) -> None:
        if self.path is None:
            return
        text = f"0\n{len(self.entries)}\n" + "".join(f"{e} {o}\n" for e, o in self.entries)
        tmp = self.path.with_name(FILE_NAME + ".tmp")
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.path)

    def __repr__(self) -> str:
        return f"LeaderEpochCache({self.entries})"


def _parse(text: str) -> list[tuple[int, int]]:
    """Kafka's checkpoint format; a torn or foreign file yields no entries (the cache then
    fills again from the batches appended from now on), never an exception at start-up."""
    lines = text.split("\n")
    try:
        if lines[0].strip() != "0":
            return []
        count = int(lines[1])
        out = []
        for line in lines[2:2 + count]:
            epoch, offset = line.split()
            out.append((int(epoch), int(offset)))
        if len(out) != count or any(b[0] <= a[0] or b[1] < a[1] for a, b in zip(out, out[1:])):
            return []
        return out
    except (ValueError, IndexError):
        return []
