"""What the consumer knows of one assigned partition: its position, a pending offset reset,
whether it is paused, and the watermarks the last fetch reported. Shared by assign mode
(consumer.py) and group mode (group/consumer_methods.py)."""
from __future__ import annotations


class PartitionState:
    __slots__ = ("topic", "partition", "position", "reset", "paused", "high_watermark",
                 "log_start_offset", "last_stable_offset")

    def __init__(self, topic: str, partition: int):
        self.topic = topic
        self.partition = partition
        self.position: int | None = None   # next offset to return; None until reset
        self.reset: int | None = None       # EARLIEST / LATEST while a reset is pending
        self.paused = False
        self.high_watermark = -1
        self.log_start_offset = -1
        self.last_stable_offset = -1
