"""What a partition's leader knows of one follower (Kafka's replica state on the leader)."""
from __future__ import annotations


class FollowerState:
    __slots__ = ("log_end_offset", "last_caught_up_ms", "last_fetch_ms", "last_fetch_leader_leo")

    def __init__(self, now_ms: int, log_end_offset: int = -1):
        self.log_end_offset = log_end_offset    # unknown (-1) until its first fetch
        # a replica in the ISR when we became leader counts as caught up now: it gets
        # replica.lag.time.max.ms to show it still is
        self.last_caught_up_ms = now_ms
        self.last_fetch_ms = now_ms
        self.last_fetch_leader_leo = -1

    def update(self, fetch_offset: int, leader_leo: int, now_ms: int) -> None:
        """A fetch from fetch_offset arrived at now_ms. Caught up now if it asks for the log
        end; caught up as of its previous fetch if it has everything the leader had then
        (Kafka's rule: a follower keeping up with a busy leader never looks lagging)."""
        if fetch_offset >= leader_leo:
            self.last_caught_up_ms = now_ms
        elif fetch_offset >= self.last_fetch_leader_leo >= 0:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.log_end_offset = fetch_offset
        self.last_fetch_leader_leo = leader_leo
        self.last_fetch_ms = now_ms

    def __repr__(self) -> str:
        return (f"FollowerState(leo={self.log_end_offset}, "
                f"caught_up={self.last_caught_up_ms})")
