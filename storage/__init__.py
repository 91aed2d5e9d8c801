"""The partition log: segments, sparse indexes, recovery, retention, compaction, leader epochs."""

from storage.cleaner import CompactionStats
from storage.config import LogConfig
from storage.log import AppendInfo, OffsetOutOfRange, PartitionLog
from storage.log_slice import LogSlice

__all__ = [
    "AppendInfo",
    "CompactionStats",
    "LogConfig",
    "LogSlice",
    "OffsetOutOfRange",
    "PartitionLog",
]
