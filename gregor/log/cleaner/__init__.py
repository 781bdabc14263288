"""Log compaction (cleanup.policy=compact): Kafka's log cleaner for gregor's logs.

offset_map (bounded key -> last offset map), decide (which records survive, sans-I/O),
cleaner (one pass over one log), swap (crash-safe replacement of segments), checkpoint
(`cleaner-offset-checkpoint`), manager (the broker's cleaner threads, metrics), throttle
(log.cleaner.io.max.bytes.per.second), worker (cleaner passes in a low-priority process).
"""
from .cleaner import CleanPass, Cleanable, PassStats, clean_log, cleanable
from .offset_map import OffsetMap

__all__ = ["CleanPass", "Cleanable", "OffsetMap", "PassStats", "clean_log", "cleanable"]
