"""Broker configuration, named as in Kafka's server.properties.

A setting the broker reads sets a field; a setting Kafka has but Odradek does not use
(a thread count, a replication quota: nothing Odradek does)
is accepted and reported once in the log; any other name, or a value that does not
parse, is a ConfigError naming the setting.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

from odradek.broker.settings.cluster_config import ClusterConfig, ClusterConfigError, cluster_config
from odradek.broker.settings.kafka_settings import (
    KAFKA_BROKER_SETTINGS,
    OTHER_DISTRIBUTION_PREFIXES,
)
from odradek.broker.settings.listeners import (
    DEFAULT_LISTENERS,
    DEFAULT_PROTOCOL_MAP,
    Listener,
    ListenerError,
    parse_endpoints,
    parse_protocol_map,
    resolve,
)
from odradek.storage import LogConfig

MIGRATION_POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")


class ConfigError(ValueError):
    """A setting that cannot be used; the message names it and says why."""


# Kafka 4.4's built-in streams task assignors (custom ones are Java classes)
STREAMS_ASSIGNORS = ("sticky",)


def streams_list(value: str) -> list[str]:
    """A LIST setting's items as Kafka splits them (blank: none)."""
    trimmed = value.strip()
    return re.split(r"\s*,\s*", trimmed) if trimmed else []


# Kafka name -> field name, for every setting the broker reads.
_NAMES = {
    "node.id": "node_id",
    "broker.id": "node_id",
    "cluster.id": "cluster_id",
    "listeners": "listeners",
    "advertised.listeners": "advertised_listeners",
    "listener.security.protocol.map": "listener_security_protocol_map",
    "controller.listener.names": "controller_listener_names",
    "process.roles": "process_roles",
    "broker.session.timeout.ms": "broker_session_timeout_ms",
    "broker.heartbeat.interval.ms": "broker_heartbeat_interval_ms",
    "initial.broker.registration.timeout.ms": "initial_broker_registration_timeout_ms",
    "controller.quorum.voters": "controller_quorum_voters",
    "controller.quorum.bootstrap.servers": "controller_quorum_bootstrap_servers",
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
    "default.replication.factor": "default_replication_factor",
    "offsets.topic.replication.factor": "offsets_topic_replication_factor",
    "transaction.state.log.replication.factor": "transaction_state_log_replication_factor",
    "transaction.state.log.min.isr": "transaction_state_log_min_isr",
    "replica.lag.time.max.ms": "replica_lag_time_max_ms",
    "inter.broker.listener.name": "inter_broker_listener_name",
    "replica.fetch.wait.max.ms": "replica_fetch_wait_max_ms",
    "replica.fetch.min.bytes": "replica_fetch_min_bytes",
    "offsets.topic.num.partitions": "offsets_topic_num_partitions",
    "transaction.state.log.num.partitions": "transaction_state_log_num_partitions",
    "group.min.session.timeout.ms": "group_min_session_timeout_ms",
    "group.max.session.timeout.ms": "group_max_session_timeout_ms",
    "group.initial.rebalance.delay.ms": "group_initial_rebalance_delay_ms",
    "offsets.retention.minutes": "offsets_retention_minutes",
    "offsets.retention.check.interval.ms": "offsets_retention_check_interval_ms",
    "offset.metadata.max.bytes": "offset_metadata_max_bytes",
    "quota.window.num": "quota_window_num",
    "quota.window.size.seconds": "quota_window_size_seconds",
    "controller.quota.window.num": "controller_quota_window_num",
    "controller.quota.window.size.seconds": "controller_quota_window_size_seconds",
    "transaction.max.timeout.ms": "transaction_max_timeout_ms",
    "transactional.id.expiration.ms": "transactional_id_expiration_ms",
    "producer.id.expiration.ms": "producer_id_expiration_ms",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "txn_abort_interval_ms",
    "log.cleaner.backoff.ms": "log_cleaner_backoff_ms",
    "group.coordinator.rebalance.protocols": "group_coordinator_rebalance_protocols",
    "group.consumer.session.timeout.ms": "group_consumer_session_timeout_ms",
    "group.consumer.heartbeat.interval.ms": "group_consumer_heartbeat_interval_ms",
    "group.consumer.max.size": "group_consumer_max_size",
    "group.consumer.min.session.timeout.ms": "group_consumer_min_session_timeout_ms",
    "group.consumer.max.session.timeout.ms": "group_consumer_max_session_timeout_ms",
    "group.consumer.min.heartbeat.interval.ms": "group_consumer_min_heartbeat_interval_ms",
    "group.consumer.max.heartbeat.interval.ms": "group_consumer_max_heartbeat_interval_ms",
    "group.consumer.migration.policy": "group_consumer_migration_policy",
    "group.share.session.timeout.ms": "group_share_session_timeout_ms",
    "group.share.min.session.timeout.ms": "group_share_min_session_timeout_ms",
    "group.share.max.session.timeout.ms": "group_share_max_session_timeout_ms",
    "group.share.heartbeat.interval.ms": "group_share_heartbeat_interval_ms",
    "group.share.min.heartbeat.interval.ms": "group_share_min_heartbeat_interval_ms",
    "group.share.max.heartbeat.interval.ms": "group_share_max_heartbeat_interval_ms",
    "group.share.max.size": "group_share_max_size",
    "group.share.delivery.count.limit": "group_share_delivery_count_limit",
    "group.share.partition.max.record.locks": "group_share_partition_max_record_locks",
    "group.share.record.lock.duration.ms": "group_share_record_lock_duration_ms",
    "group.share.min.record.lock.duration.ms": "group_share_min_record_lock_duration_ms",
    "group.share.max.record.lock.duration.ms": "group_share_max_record_lock_duration_ms",
    "group.share.max.share.sessions": "share_max_share_sessions",
    "group.streams.session.timeout.ms": "group_streams_session_timeout_ms",
    "group.streams.min.session.timeout.ms": "group_streams_min_session_timeout_ms",
    "group.streams.max.session.timeout.ms": "group_streams_max_session_timeout_ms",
    "group.streams.heartbeat.interval.ms": "group_streams_heartbeat_interval_ms",
    "group.streams.min.heartbeat.interval.ms": "group_streams_min_heartbeat_interval_ms",
    "group.streams.max.heartbeat.interval.ms": "group_streams_max_heartbeat_interval_ms",
    "group.streams.max.size": "group_streams_max_size",
    "group.streams.num.standby.replicas": "group_streams_num_standby_replicas",
    "group.streams.max.standby.replicas": "group_streams_max_standby_replicas",
    "group.streams.initial.rebalance.delay.ms": "group_streams_initial_rebalance_delay_ms",
    "group.streams.assignment.interval.ms": "group_streams_assignment_interval_ms",
    "group.streams.min.assignment.interval.ms": "group_streams_min_assignment_interval_ms",
    "group.streams.max.assignment.interval.ms": "group_streams_max_assignment_interval_ms",
    "group.streams.task.offset.interval.ms": "group_streams_task_offset_interval_ms",
    "group.streams.min.task.offset.interval.ms": "group_streams_min_task_offset_interval_ms",
    "group.streams.num.warmup.replicas": "group_streams_num_warmup_replicas",
    "group.streams.max.warmup.replicas": "group_streams_max_warmup_replicas",
    "group.streams.acceptable.recovery.lag": "group_streams_acceptable_recovery_lag",
    "group.streams.rack.aware.assignment.tags": "group_streams_rack_aware_assignment_tags",
    "group.streams.assignors": "group_streams_assignors",
    "group.streams.assignor.offload.enable": "group_streams_assignor_offload_enable",
    "share.coordinator.state.topic.num.partitions": "share_coordinator_state_topic_num_partitions",
    "share.coordinator.snapshot.update.records.per.snapshot": (
        "share_coordinator_snapshot_update_records_per_snapshot"
    ),
    "share.coordinator.state.topic.prune.interval.ms": (
        "share_coordinator_state_topic_prune_interval_ms"
    ),
    "max.request.partition.size.limit": "max_request_partition_size_limit",
    "telemetry.max.bytes": "telemetry_max_bytes",
    "delegation.token.secret.key": "delegation_token_secret_key",
    "delegation.token.max.lifetime.ms": "delegation_token_max_lifetime_ms",
    "delegation.token.expiry.time.ms": "delegation_token_expiry_time_ms",
    "delegation.token.expiry.check.interval.ms": "delegation_token_expiry_check_interval_ms",
    "max.connections": "max_connections",
    "max.connections.per.ip": "max_connections_per_ip",
    "max.connections.per.ip.overrides": "max_connections_per_ip_overrides",
    "socket.listen.backlog.size": "socket_listen_backlog_size",
    "connections.max.idle.ms": "connections_max_idle_ms",
}
# Per-listener forms of a setting: listener.name.<listener>.<setting>
_PER_LISTENER = re.compile(r"^listener\.name\.[a-z0-9_]+\.(.+)$")
# Per-mechanism SASL settings: [listener.name.<listener>.]<mechanism>.sasl.jaas.config
_PER_MECHANISM = re.compile(r"^[a-z0-9-]+\.(sasl\..+)$")
# Read from `raw` per listener by broker/security (so not reported as unused; the
# JAAS config holds passwords, which must not reach the log)
READ_BY_SECURITY = frozenset(
    {
        "sasl.enabled.mechanisms",
        "sasl.jaas.config",
        "sasl.server.max.receive.size",
        "connection.failed.authentication.delay.ms",
        "authorizer.class.name",
        "super.users",
        "allow.everyone.if.no.acl.found",
    }
)

HOUR_MS = 3600 * 1000


@dataclass
class BrokerConfig:
    data_dir: Path = Path("data")
    metrics_port: int | None = None
    node_id: int = 0
    cluster_id: str = "odradek-cluster"
    listeners: str = DEFAULT_LISTENERS
    advertised_listeners: str | None = None
    listener_security_protocol_map: str = DEFAULT_PROTOCOL_MAP
    controller_listener_names: str = ""
    process_roles: str = ""
    controller_quorum_voters: str = ""
    controller_quorum_bootstrap_servers: str = ""
    broker_session_timeout_ms: int = 9000
    broker_heartbeat_interval_ms: int = 2000
    initial_broker_registration_timeout_ms: int = 60000
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
    # in a cluster (one node of its own keeps one copy whatever they say)
    default_replication_factor: int = 1
    offsets_topic_replication_factor: int = 3
    transaction_state_log_replication_factor: int = 3
    transaction_state_log_min_isr: int = 2
    replica_lag_time_max_ms: int = 30000
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_min_bytes: int = 1
    inter_broker_listener_name: str = ""  # what followers fetch through
    offsets_topic_num_partitions: int = 50
    transaction_state_log_num_partitions: int = 50
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    # Kafka's code default is 3000; its shipped server.properties, which a test broker
    # follows, sets 0 so that the first consumers of a group do not wait three seconds.
    group_initial_rebalance_delay_ms: int = 0
    offsets_retention_minutes: int = 10080
    offsets_retention_check_interval_ms: int = 600000
    offset_metadata_max_bytes: int = 4096
    # client quotas: the rate is measured over this many samples of this many seconds
    quota_window_num: int = 11
    quota_window_size_seconds: int = 1
    # controller_mutation_rate: a bucket of this many windows' worth of partitions
    controller_quota_window_num: int = 11
    controller_quota_window_size_seconds: int = 1
    transaction_max_timeout_ms: int = 900000
    transactional_id_expiration_ms: int = 604800000
    producer_id_expiration_ms: int = 86400000
    txn_abort_interval_ms: int = 10000
    log_cleaner_backoff_ms: int = 15000
    group_coordinator_rebalance_protocols: str = "classic,consumer,streams"
    group_consumer_session_timeout_ms: int = 45000
    group_consumer_heartbeat_interval_ms: int = 5000
    group_consumer_max_size: int = 2147483647
    group_consumer_min_session_timeout_ms: int = 45000
    group_consumer_max_session_timeout_ms: int = 60000
    group_consumer_min_heartbeat_interval_ms: int = 5000
    group_consumer_max_heartbeat_interval_ms: int = 15000
    group_consumer_migration_policy: str = "bidirectional"
    # share groups (KIP-932)
    group_share_session_timeout_ms: int = 45000
    group_share_min_session_timeout_ms: int = 45000
    group_share_max_session_timeout_ms: int = 60000
    group_share_heartbeat_interval_ms: int = 5000
    group_share_min_heartbeat_interval_ms: int = 5000
    group_share_max_heartbeat_interval_ms: int = 15000
    group_share_max_size: int = 200
    group_share_delivery_count_limit: int = 5
    group_share_partition_max_record_locks: int = 2000
    group_share_record_lock_duration_ms: int = 30000
    group_share_min_record_lock_duration_ms: int = 15000
    group_share_max_record_lock_duration_ms: int = 60000
    share_max_share_sessions: int = 2000
    # streams groups (KIP-1071)
    group_streams_session_timeout_ms: int = 45000
    group_streams_min_session_timeout_ms: int = 45000
    group_streams_max_session_timeout_ms: int = 60000
    group_streams_heartbeat_interval_ms: int = 5000
    group_streams_min_heartbeat_interval_ms: int = 5000
    group_streams_max_heartbeat_interval_ms: int = 15000
    group_streams_max_size: int = 2147483647
    group_streams_num_standby_replicas: int = 0
    group_streams_max_standby_replicas: int = 2
    group_streams_initial_rebalance_delay_ms: int = 3000
    group_streams_assignment_interval_ms: int = 1000
    group_streams_min_assignment_interval_ms: int = 0
    group_streams_max_assignment_interval_ms: int = 15000
    # how often members report their changelog offsets (the heartbeat tells them)
    group_streams_task_offset_interval_ms: int = 60000
    group_streams_min_task_offset_interval_ms: int = 15000
    # Kafka 4.4 validates and stores these, but its assignment refiner hands out no
    # warm-up task whatever they say
    group_streams_num_warmup_replicas: int = 2
    group_streams_max_warmup_replicas: int = 20
    group_streams_acceptable_recovery_lag: int = 10000
    group_streams_rack_aware_assignment_tags: str = ""
    group_streams_assignors: str = "sticky"  # the built-in ones; the first is the default
    group_streams_assignor_offload_enable: bool = True
    share_coordinator_state_topic_num_partitions: int = 50
    share_coordinator_snapshot_update_records_per_snapshot: int = 500
    share_coordinator_state_topic_prune_interval_ms: int = 300000
    max_request_partition_size_limit: int = 2000  # DescribeTopicPartitions' page size cap
    telemetry_max_bytes: int = 1048576  # the largest metrics push a client may send
    delegation_token_secret_key: str | None = None  # delegation tokens only when set
    delegation_token_max_lifetime_ms: int = 604800000
    delegation_token_expiry_time_ms: int = 86400000
    delegation_token_expiry_check_interval_ms: int = 3600000
    max_connections: int = 2147483647
    max_connections_per_ip: int = 2147483647
    max_connections_per_ip_overrides: str = ""
    # Kafka's default is 50, for an acceptor thread that does nothing else; one event
    # loop that also serves requests accepts in bursts, so clients that connect many at
    # once would overflow 50 and wait for SYN retries (a second each).
    socket_listen_backlog_size: int = 1024
    connections_max_idle_ms: int = 600000
    # Kafka settings given but not used here, with their values
    unused: dict[str, str] = field(default_factory=dict)
    # every setting as given (security settings are read from here, per listener)
    raw: dict[str, str] = field(default_factory=dict)

    def apply(self, settings: Mapping[str, str]) -> None:
        """Set values given by Kafka name; raises ConfigError for unknown names and
        values that do not parse."""
        types = {f.name: f.type for f in fields(self)}
        for name, raw in settings.items():
            self.raw[name] = raw
            attr = _NAMES.get(name)
            if attr is None:
                if not is_kafka_setting(name):
                    raise ConfigError(f"{name}: not a Kafka broker setting")
                if _base_setting(name) not in READ_BY_SECURITY:
                    self.unused[name] = raw
                continue
            try:
                setattr(self, attr, _parse(raw, str(types[attr])))
            except ValueError as exc:
                raise ConfigError(f"{name}={raw!r}: {exc}") from None
        policy = self.group_consumer_migration_policy.lower()
        if policy not in MIGRATION_POLICIES:
            raise ConfigError(
                f"group.consumer.migration.policy={policy!r}: not one of "
                f"{', '.join(MIGRATION_POLICIES)}"
            )
        self.group_consumer_migration_policy = policy
        # an empty key turns delegation tokens off, as on Kafka
        self.delegation_token_secret_key = self.delegation_token_secret_key or None
        windows = ("quota.window.num", "quota.window.size.seconds")
        for name in [n for n in _NAMES if n.endswith(windows)]:
            if getattr(self, _NAMES[name]) < 1:
                raise ConfigError(f"{name}: must be at least 1")
        self._check_streams_settings()

    def _check_streams_settings(self) -> None:
        """The group.streams.* settings against each other, as Kafka 4.4 checks them."""
        pairs = (
            ("group.streams.min.assignment.interval.ms", "group.streams.assignment.interval.ms"),
            ("group.streams.assignment.interval.ms", "group.streams.max.assignment.interval.ms"),
            ("group.streams.min.task.offset.interval.ms", "group.streams.task.offset.interval.ms"),
            ("group.streams.num.warmup.replicas", "group.streams.max.warmup.replicas"),
        )
        for low, high in pairs:
            if getattr(self, _NAMES[low]) > getattr(self, _NAMES[high]):
                raise ConfigError(f"{low} must not be greater than {high}")
        tags = streams_list(self.group_streams_rack_aware_assignment_tags)
        if len(set(tags)) != len(tags):
            raise ConfigError(
                "group.streams.rack.aware.assignment.tags must not contain duplicate tag keys."
            )
        assignors = streams_list(self.group_streams_assignors)
        unknown = [name for name in assignors if name not in STREAMS_ASSIGNORS]
        if not assignors or unknown or len(set(assignors)) != len(assignors):
            raise ConfigError(
                f"group.streams.assignors={self.group_streams_assignors!r}: a list of "
                f"distinct built-in assignors ({', '.join(STREAMS_ASSIGNORS)})"
            )

    def listener_setting(self, listener: str, name: str) -> str | None:
        """A setting as one listener sees it: `listener.name.<listener>.<name>` wins
        over `<name>` (Kafka's per-listener prefixes)."""
        own = self.raw.get(f"listener.name.{listener.lower()}.{name}")
        return own if own is not None else self.raw.get(name)

    def resolved_listeners(self) -> list[Listener]:
        cluster = self.cluster()
        try:
            return resolve(
                self.listeners,
                self.advertised_listeners,
                self.listener_security_protocol_map,
                self.controller_listener_names,
                self.advertised_host,
                open_controllers=cluster.is_controller and not cluster.standalone,
            )
        except ListenerError as exc:
            raise ConfigError(str(exc)) from None

    def cluster(self) -> ClusterConfig:
        """The node's KRaft settings, checked against each other and the listeners."""
        given = "node.id" in self.raw or "broker.id" in self.raw
        try:
            cluster = cluster_config(
                process_roles=self.process_roles,
                node_id=self.node_id if given else None,
                voters=self.controller_quorum_voters,
                bootstrap_servers=self.controller_quorum_bootstrap_servers,
                controller_listener_names=self.controller_listener_names,
                listener_names=[e.name for e in parse_endpoints("listeners", self.listeners)],
            )
        except (ClusterConfigError, ListenerError) as exc:
            raise ConfigError(str(exc)) from None
        if not cluster.standalone:
            self._plaintext_controllers(cluster)
            if cluster.is_broker:
                self.inter_broker_listener(cluster)
        return cluster

    def inter_broker_listener(self, cluster: ClusterConfig) -> str:
        """What followers fetch through: inter.broker.listener.name, else the listener
        named PLAINTEXT, else the first broker listener (PLAINTEXT only, so far)."""
        endpoints = parse_endpoints("listeners", self.listeners)
        names = [e.name for e in endpoints if e.name not in cluster.controller_listener_names]
        configured = self.inter_broker_listener_name.upper()
        name = configured or ("PLAINTEXT" if "PLAINTEXT" in names or not names else names[0])
        if configured and name not in names:
            raise ConfigError(
                f"inter.broker.listener.name={name}: not one of this broker's listeners "
                f"({', '.join(names)})"
            )
        try:
            protocol = parse_protocol_map(self.listener_security_protocol_map).get(name, name)
        except ListenerError as exc:
            raise ConfigError(str(exc)) from None
        if protocol != "PLAINTEXT":
            raise ConfigError(
                f"inter-broker listener {name} uses {protocol}; brokers replicate over "
                "PLAINTEXT only so far (set inter.broker.listener.name)"
            )
        return name

    def _plaintext_controllers(self, cluster: ClusterConfig) -> None:
        """Brokers reach the controller in PLAINTEXT only, so far."""
        try:
            protocols = parse_protocol_map(self.listener_security_protocol_map)
        except ListenerError as exc:
            raise ConfigError(str(exc)) from None
        for name in cluster.controller_listener_names:
            protocol = protocols.get(name, "PLAINTEXT")
            if protocol != "PLAINTEXT":
                raise ConfigError(
                    f"listener.security.protocol.map: controller listener {name} uses "
                    f"{protocol}; brokers reach the controller in PLAINTEXT only so far"
                )

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


def _base_setting(name: str) -> str:
    """The setting without its listener and mechanism prefixes."""
    per_listener = _PER_LISTENER.match(name)
    if per_listener is not None:
        name = per_listener.group(1)
    per_mechanism = _PER_MECHANISM.match(name)
    return per_mechanism.group(1) if per_mechanism is not None else name


def is_kafka_setting(name: str) -> bool:
    if name in _NAMES or name in KAFKA_BROKER_SETTINGS:
        return True
    if name.startswith(OTHER_DISTRIBUTION_PREFIXES):
        return True
    per_listener = _PER_LISTENER.match(name)
    if per_listener is not None:
        return is_kafka_setting(per_listener.group(1))
    per_mechanism = _PER_MECHANISM.match(name)
    return per_mechanism is not None and per_mechanism.group(1) in KAFKA_BROKER_SETTINGS


def _parse(raw: str, type_name: str) -> object:
    raw = raw.strip()
    if "bool" in type_name:
        if raw.lower() not in ("true", "false"):
            raise ValueError("expected true or false")
        return raw.lower() == "true"
    if "int" in type_name:
        try:
            return int(raw)
        except ValueError:
            raise ValueError("expected a whole number") from None
    if "Path" in type_name:
        return Path(raw)
    return raw


# KAFKA_* variables the apache/kafka image reads as something other than a setting
_NOT_SETTINGS = frozenset(
    {
        "KAFKA_VERSION",
        "KAFKA_HEAP_OPTS",
        "KAFKA_LOG4J_OPTS",
        "KAFKA_OPTS",
        "KAFKA_JMX_OPTS",
        "KAFKA_JVM_PERFORMANCE_OPTS",
        "KAFKA_GC_LOG_OPTS",
        "KAFKA_LOG4J_ROOT_LOGLEVEL",
        "KAFKA_LOG4J_LOGGERS",
        "KAFKA_TOOLS_LOG4J_LOGLEVEL",
        "KAFKA_JMX_HOSTNAME",
    }
)


# What --environment listens on when no KAFKA_* variable is set, as the apache/kafka
# image does: every interface, clients on the host told localhost.
ENVIRONMENT_DEFAULTS = {
    "listeners": "PLAINTEXT://:9092",
    "advertised.listeners": "PLAINTEXT://localhost:9092",
}


def settings_from_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """Settings from environment variables named as the apache/kafka image names them:
    KAFKA_ and the setting in capitals, `.` written `_`, `_` written `__` and `-`
    written `___` (KAFKA_LISTENER_SECURITY_PROTOCOL_MAP -> listener.security.protocol.map).
    CLUSTER_ID gives cluster.id."""
    settings: dict[str, str] = {}
    for variable, value in environ.items():
        if not variable.startswith("KAFKA_") or variable in _NOT_SETTINGS:
            continue
        name = variable[len("KAFKA_") :].lower().replace("_", ".")
        settings[name.replace("...", "-").replace("..", "_")] = value
    if not settings:
        settings.update(ENVIRONMENT_DEFAULTS)
    if "CLUSTER_ID" in environ and "cluster.id" not in settings:
        settings["cluster.id"] = environ["CLUSTER_ID"]
    return settings


def read_properties(path: Path) -> dict[str, str]:
    """Parse a Java .properties file (the subset server.properties uses)."""
    settings: dict[str, str] = {}
    for line in _logical_lines(path.read_text()):
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        for separator in ("=", ":"):
            if separator in line:
                key, value = line.split(separator, 1)
                settings[key.strip()] = value.strip()
                break
    return settings


def _logical_lines(text: str) -> list[str]:
    """Java properties lines: a line ending in an odd number of backslashes goes on
    with the next one, whose leading white space is dropped (JAAS configs are
    usually written over several lines)."""
    lines: list[str] = []
    parts: list[str] = []
    for natural in text.splitlines():
        line = natural.lstrip()
        if not parts and line.startswith(("#", "!")):
            continue  # a comment never continues, whatever it ends with
        if (len(line) - len(line.rstrip("\\"))) % 2 == 1:
            parts.append(line[:-1])
            continue
        lines.append("".join([*parts, line]))
        parts = []
    if parts:
        lines.append("".join(parts))
    return lines
