"""The partition log: segments, sparse indexes, recovery, retention, compaction, leader epochs."""

from storage.cleaner import CompactionStats
from storage.config import LogConfig
from storage.log import AppendInfo, LogSlice, OffsetOutOfRange, PartitionLog

__all__ = [
    "AppendInfo",
    "CompactionStats",
    "LogConfig",
    "LogSlice",
    "OffsetOutOfRange",
    "PartitionLog",
]
