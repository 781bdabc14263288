"""Storage engine for one partition: segments, indexes, recovery, retention, producer state.

`Log.open(dir, LogConfig(...))` is the entry point; see docs/CONTRACTS.md for the contract.
"""
from .config import LONG_MAX, LogConfig
from .log import AppendInfo, AppendOffsetError, Log
from .producer_state import BatchMetadata, ProducerStateEntry, ProducerStateManager
from .recovery import RecoveryReport

__all__ = ["LONG_MAX", "AppendInfo", "AppendOffsetError", "BatchMetadata", "Log", "LogConfig",
           "ProducerStateEntry", "ProducerStateManager", "RecoveryReport"]
