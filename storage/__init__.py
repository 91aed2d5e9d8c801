"""The partition log: segments, sparse indexes, recovery, retention, leader epochs."""

from storage.config import LogConfig
from storage.log import AppendInfo, LogSlice, OffsetOutOfRange, PartitionLog

__all__ = ["AppendInfo", "LogConfig", "LogSlice", "OffsetOutOfRange", "PartitionLog"]
