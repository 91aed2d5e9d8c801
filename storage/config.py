"""Per-partition log settings and their Kafka topic-config names."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

INT32_MAX = (1 << 31) - 1
INT64_MAX = (1 << 63) - 1

CLEANUP_POLICIES = ("delete", "compact", "compact,delete")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


@dataclass(frozen=True)
class LogConfig:
    segment_bytes: int = 1 << 30
    segment_ms: int = 7 * 24 * 3600 * 1000
    retention_ms: int = 7 * 24 * 3600 * 1000  # -1: keep forever
    retention_bytes: int = -1  # -1: no size limit
    index_interval_bytes: int = 4096
    max_message_bytes: int = 1048588  # checked by the broker, kept here for topic configs
    flush_messages: int | None = None  # None: rely on the page cache; 1: fsync every append
    flush_ms: int | None = None
    cleanup_policy: str = "delete"  # "delete", "compact" or "compact,delete"
    message_timestamp_type: str = "CreateTime"  # or "LogAppendTime"
    # how far before or after the broker's clock a CreateTime record may be stamped
    message_timestamp_before_max_ms: int = INT64_MAX
    message_timestamp_after_max_ms: int = INT64_MAX
    min_insync_replicas: int = 1
    # Compaction (cleanup.policy=compact), see storage/cleaner.py
    delete_retention_ms: int = 24 * 3600 * 1000  # tombstones and markers live this long
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0

    @property
    def deletes(self) -> bool:
        return "delete" in self.cleanup_policy.split(",")

    @property
    def compacts(self) -> bool:
        return "compact" in self.cleanup_policy.split(",")

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @classmethod
    def from_topic_configs(cls, configs: Mapping[str, str], base: LogConfig) -> LogConfig:
        """`base` with the known Kafka topic configs applied; unknown names are ignored.

        Raises ValueError naming the config when a value is malformed or out of range.
        """
        changes: dict[str, Any] = {}
        for name, value in configs.items():
            parser = _PARSERS.get(name)
            if parser is None:
                continue
            field_name, parse = parser
            if value is None:
                raise ValueError(f"{name} has no value")
            try:
                changes[field_name] = parse(str(value).strip())
            except ValueError as exc:
                raise ValueError(f"invalid value {value!r} for {name}: {exc}") from None
        return dataclasses.replace(base, **changes)

    def to_topic_configs(self) -> dict[str, str]:
        """The settings under their Kafka names (for DescribeConfigs)."""
        out: dict[str, str] = {}
        for name, (field_name, _parse) in _PARSERS.items():
            value = getattr(self, field_name)
            if value is None:
                value = INT64_MAX
            out[name] = str(value)
        return out


def _long(minimum: int, maximum: int = INT64_MAX) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text)
        if not minimum <= value <= maximum:
            raise ValueError(f"must be in [{minimum}, {maximum}]")
        return value

    return parse


def _optional_long(minimum: int) -> Callable[[str], int | None]:
    parse_long = _long(minimum)

    def parse(text: str) -> int | None:
        value = parse_long(text)
        # Kafka's default for the flush settings is Long.MAX_VALUE: "never".
        return None if value == INT64_MAX else value

    return parse


def _cleanup_policy(text: str) -> str:
    parts = {part.strip() for part in text.split(",") if part.strip()}
    if not parts or not parts <= {"delete", "compact"}:
        raise ValueError("must be a list of 'delete' and 'compact'")
    return ",".join(sorted(parts))


def _ratio(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise ValueError("must be in [0, 1]")
    return value


def _timestamp_type(text: str) -> str:
    if text not in TIMESTAMP_TYPES:
        raise ValueError(f"must be one of {', '.join(TIMESTAMP_TYPES)}")
    return text


_PARSERS: dict[str, tuple[str, Callable[[str], Any]]] = {
    # 14 bytes is Kafka's historical minimum; positions in the index are int32.
    "segment.bytes": ("segment_bytes", _long(14, INT32_MAX)),
    "segment.ms": ("segment_ms", _long(1)),
    "retention.ms": ("retention_ms", _long(-1)),
    "retention.bytes": ("retention_bytes", _long(-1)),
    "index.interval.bytes": ("index_interval_bytes", _long(0, INT32_MAX)),
    "max.message.bytes": ("max_message_bytes", _long(0, INT32_MAX)),
    "flush.messages": ("flush_messages", _optional_long(1)),
    "flush.ms": ("flush_ms", _optional_long(0)),
    "cleanup.policy": ("cleanup_policy", _cleanup_policy),
    "message.timestamp.type": ("message_timestamp_type", _timestamp_type),
    "message.timestamp.before.max.ms": ("message_timestamp_before_max_ms", _long(0)),
    "message.timestamp.after.max.ms": ("message_timestamp_after_max_ms", _long(0)),
    "min.insync.replicas": ("min_insync_replicas", _long(1, INT32_MAX)),
    "delete.retention.ms": ("delete_retention_ms", _long(0)),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", _ratio),
    "min.compaction.lag.ms": ("min_compaction_lag_ms", _long(0)),
}
