"""Broker configuration, named as in Kafka's server.properties."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

from storage import LogConfig

# Kafka name -> field name, for every setting the broker reads.
_NAMES = {
    "node.id": "node_id",
    "broker.id": "node_id",
    "cluster.id": "cluster_id",
    "advertised.host.name": "advertised_host",
    "num.partitions": "num_partitions",
    "auto.create.topics.enable": "auto_create_topics",
    "delete.topic.enable": "delete_topic_enable",
    "message.max.bytes": "message_max_bytes",
    "socket.request.max.bytes": "socket_request_max_bytes",
    "log.segment.bytes": "log_segment_bytes",
    "log.roll.ms": "log_roll_ms",
    "log.roll.hours": "log_roll_hours",
    "log.retention.ms": "log_retention_ms",
    "log.retention.minutes": "log_retention_minutes",
    "log.retention.hours": "log_retention_hours",
    "log.retention.bytes": "log_retention_bytes",
    "log.retention.check.interval.ms": "log_retention_check_interval_ms",
    "log.index.interval.bytes": "log_index_interval_bytes",
    "log.flush.interval.messages": "log_flush_interval_messages",
    "log.flush.interval.ms": "log_flush_interval_ms",
    "log.cleanup.policy": "log_cleanup_policy",
    "log.message.timestamp.type": "log_message_timestamp_type",
    "min.insync.replicas": "min_insync_replicas",
    "offsets.topic.num.partitions": "offsets_topic_num_partitions",
    "transaction.state.log.num.partitions": "transaction_state_log_num_partitions",
    "group.min.session.timeout.ms": "group_min_session_timeout_ms",
    "group.max.session.timeout.ms": "group_max_session_timeout_ms",
    "group.initial.rebalance.delay.ms": "group_initial_rebalance_delay_ms",
    "offsets.retention.minutes": "offsets_retention_minutes",
    "offsets.retention.check.interval.ms": "offsets_retention_check_interval_ms",
    "offset.metadata.max.bytes": "offset_metadata_max_bytes",
    "transaction.max.timeout.ms": "transaction_max_timeout_ms",
    "transactional.id.expiration.ms": "transactional_id_expiration_ms",
    "producer.id.expiration.ms": "producer_id_expiration_ms",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "txn_abort_interval_ms",
}

HOUR_MS = 3600 * 1000


@dataclass
class BrokerConfig:
    data_dir: Path = Path("data")
    host: str = "127.0.0.1"
    port: int = 9092
    metrics_port: int | None = None
    node_id: int = 0
    cluster_id: str = "odradek-cluster"
    advertised_host: str | None = None
    num_partitions: int = 1
    auto_create_topics: bool = True
    delete_topic_enable: bool = True
    message_max_bytes: int = 1048588
    socket_request_max_bytes: int = 104857600
    log_segment_bytes: int = 1073741824
    log_roll_ms: int | None = None
    log_roll_hours: int = 168
    log_retention_ms: int | None = None
    log_retention_minutes: int | None = None
    log_retention_hours: int = 168
    log_retention_bytes: int = -1
    log_retention_check_interval_ms: int = 300000
    log_index_interval_bytes: int = 4096
    log_flush_interval_messages: int | None = None
    log_flush_interval_ms: int | None = None
    log_cleanup_policy: str = "delete"
    log_message_timestamp_type: str = "CreateTime"
    min_insync_replicas: int = 1
    offsets_topic_num_partitions: int = 50
    transaction_state_log_num_partitions: int = 50
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_initial_rebalance_delay_ms: int = 3000
    offsets_retention_minutes: int = 10080
    offsets_retention_check_interval_ms: int = 600000
    offset_metadata_max_bytes: int = 4096
    transaction_max_timeout_ms: int = 900000
    transactional_id_expiration_ms: int = 604800000
    producer_id_expiration_ms: int = 86400000
    txn_abort_interval_ms: int = 10000
    extra: dict[str, str] = field(default_factory=dict)

    def apply(self, settings: Mapping[str, str]) -> None:
        """Set values given by Kafka name; unknown names are kept in `extra`."""
        types = {f.name: f.type for f in fields(self)}
        for name, raw in settings.items():
            attr = _NAMES.get(name)
            if attr is None:
                self.extra[name] = raw
                continue
            setattr(self, attr, _parse(raw, str(types[attr])))

    @property
    def advertised(self) -> str:
        """The host clients are told to connect to (never a wildcard address)."""
        listeners = self.extra.get("advertised.listeners")
        if listeners:
            # PLAINTEXT://host:port[,...]: the first listener's host
            return listeners.split(",")[0].split("://", 1)[-1].rsplit(":", 1)[0]
        if self.advertised_host:
            return self.advertised_host
        return "127.0.0.1" if self.host in ("", "0.0.0.0", "::") else self.host

    def retention_ms(self) -> int:
        if self.log_retention_ms is not None:
            return self.log_retention_ms
        if self.log_retention_minutes is not None:
            return self.log_retention_minutes * 60000
        return self.log_retention_hours * HOUR_MS

    def log_config(self) -> LogConfig:
        """Defaults for every topic; a topic's own configs override them."""
        return LogConfig(
            segment_bytes=self.log_segment_bytes,
            segment_ms=self.log_roll_ms
            if self.log_roll_ms is not None
            else self.log_roll_hours * HOUR_MS,
            retention_ms=self.retention_ms(),
            retention_bytes=self.log_retention_bytes,
            index_interval_bytes=self.log_index_interval_bytes,
            max_message_bytes=self.message_max_bytes,
            flush_messages=self.log_flush_interval_messages,
            flush_ms=self.log_flush_interval_ms,
            cleanup_policy=self.log_cleanup_policy,
            message_timestamp_type=self.log_message_timestamp_type,
            min_insync_replicas=self.min_insync_replicas,
        )


def _parse(raw: str, type_name: str) -> object:
    raw = raw.strip()
    if "bool" in type_name:
        if raw.lower() not in ("true", "false"):
            raise ValueError(f"expected true or false, got {raw!r}")
        return raw.lower() == "true"
    if "int" in type_name:
        return int(raw)
    if "Path" in type_name:
        return Path(raw)
    return raw


def read_properties(path: Path) -> dict[str, str]:
    """Parse a Java .properties file (the subset server.properties uses)."""
    settings: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        for separator in ("=", ":"):
            if separator in line:
                key, value = line.split(separator, 1)
                settings[key.strip()] = value.strip()
                break
    return settings
