"""The partition log: segments, sparse indexes, recovery, retention, compaction, leader epochs."""

from odradek.storage.cleaner import CompactionStats
from odradek.storage.config import LogConfig
from odradek.storage.log import AppendInfo, OffsetOutOfRange, PartitionLog
from odradek.storage.log_slice import LogSlice

__all__ = [
    "AppendInfo",
    "CompactionStats",
    "LogConfig",
    "LogSlice",
    "OffsetOutOfRange",
    "PartitionLog",
]
