"""Broker configuration, named as in Kafka's server.properties.

A setting the broker reads is declared once, on the BrokerConfig field it sets: its
Kafka name, type, default and checks (setting.py). A setting Kafka has but Odradek does
not use (a thread count, a replication quota: nothing Odradek does; kafka_settings.py)
is accepted and reported once in the log; any other name, or a value that does not
parse, is a ConfigError naming the setting.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

from odradek.broker.settings.cluster_config import ClusterConfig, ClusterConfigError, cluster_config
from odradek.broker.settings.kafka_settings import NOT_READ, OTHER_DISTRIBUTION_PREFIXES
from odradek.broker.settings.listeners import (
    DEFAULT_LISTENERS,
    DEFAULT_PROTOCOL_MAP,
    Listener,
    ListenerError,
    parse_endpoints,
    parse_protocol_map,
    resolve,
)
from odradek.broker.settings.setting import (
    BOOLEAN,
    INT,
    LIST,
    LONG,
    PASSWORD,
    SHORT,
    STRING,
    ConfigError,
    Setting,
    at_least,
    declared_setting,
    distinct_tags,
    none_if_empty,
    one_of,
    setting,
    streams_assignors,
)
from odradek.storage import LogConfig

MIGRATION_POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")

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
    """What the broker runs with. A field that a Kafka setting sets declares it with
    `setting(...)`; cli.py sets data_dir (--data-dir or log.dirs) and metrics_port."""

    data_dir: Path = Path("data")
    metrics_port: int | None = None
    node_id: int = setting("node.id", INT, 0, alias="broker.id")
    cluster_id: str = setting("cluster.id", STRING, "odradek-cluster")
    listeners: str = setting("listeners", LIST, DEFAULT_LISTENERS)
    advertised_listeners: str | None = setting("advertised.listeners", LIST, None)
    listener_security_protocol_map: str = setting(
        "listener.security.protocol.map", STRING, DEFAULT_PROTOCOL_MAP
    )
    controller_listener_names: str = setting("controller.listener.names", LIST, "")
    process_roles: str = setting("process.roles", LIST, "")
    controller_quorum_voters: str = setting("controller.quorum.voters", LIST, "")
    controller_quorum_bootstrap_servers: str = setting(
        "controller.quorum.bootstrap.servers", LIST, ""
    )
    broker_session_timeout_ms: int = setting("broker.session.timeout.ms", INT, 9000)
    broker_heartbeat_interval_ms: int = setting("broker.heartbeat.interval.ms", INT, 2000)
    initial_broker_registration_timeout_ms: int = setting(
        "initial.broker.registration.timeout.ms", INT, 60000
    )
    advertised_host: str | None = setting("advertised.host.name", STRING, None)
    num_partitions: int = setting("num.partitions", INT, 1)
    auto_create_topics: bool = setting("auto.create.topics.enable", BOOLEAN, True)
    delete_topic_enable: bool = setting("delete.topic.enable", BOOLEAN, True)
    message_max_bytes: int = setting("message.max.bytes", INT, 1048588)
    socket_request_max_bytes: int = setting("socket.request.max.bytes", INT, 104857600)
    log_segment_bytes: int = setting("log.segment.bytes", INT, 1073741824)
    log_roll_ms: int | None = setting("log.roll.ms", LONG, None)
    log_roll_hours: int = setting("log.roll.hours", INT, 168)
    log_retention_ms: int | None = setting("log.retention.ms", LONG, None)
    log_retention_minutes: int | None = setting("log.retention.minutes", INT, None)
    log_retention_hours: int = setting("log.retention.hours", INT, 168)
    log_retention_bytes: int = setting("log.retention.bytes", LONG, -1)
    log_retention_check_interval_ms: int = setting("log.retention.check.interval.ms", LONG, 300000)
    log_index_interval_bytes: int = setting("log.index.interval.bytes", INT, 4096)
    log_flush_interval_messages: int | None = setting("log.flush.interval.messages", LONG, None)
    log_flush_interval_ms: int | None = setting("log.flush.interval.ms", LONG, None)
    log_cleanup_policy: str = setting("log.cleanup.policy", LIST, "delete")
    log_message_timestamp_type: str = setting("log.message.timestamp.type", STRING, "CreateTime")
    min_insync_replicas: int = setting("min.insync.replicas", INT, 1)
    # in a cluster (one node of its own keeps one copy whatever they say)
    default_replication_factor: int = setting("default.replication.factor", INT, 1)
    offsets_topic_replication_factor: int = setting("offsets.topic.replication.factor", SHORT, 3)
    transaction_state_log_replication_factor: int = setting(
        "transaction.state.log.replication.factor", SHORT, 3
    )
    transaction_state_log_min_isr: int = setting("transaction.state.log.min.isr", INT, 2)
    replica_lag_time_max_ms: int = setting("replica.lag.time.max.ms", LONG, 30000)
    replica_fetch_wait_max_ms: int = setting("replica.fetch.wait.max.ms", INT, 500)
    replica_fetch_min_bytes: int = setting("replica.fetch.min.bytes", INT, 1)
    # what followers fetch through
    inter_broker_listener_name: str = setting("inter.broker.listener.name", STRING, "")
    offsets_topic_num_partitions: int = setting("offsets.topic.num.partitions", INT, 50)
    transaction_state_log_num_partitions: int = setting(
        "transaction.state.log.num.partitions", INT, 50
    )
    group_min_session_timeout_ms: int = setting("group.min.session.timeout.ms", INT, 6000)
    group_max_session_timeout_ms: int = setting("group.max.session.timeout.ms", INT, 1800000)
    # Kafka's code default is 3000; its shipped server.properties, which a test broker
    # follows, sets 0 so that the first consumers of a group do not wait three seconds.
    group_initial_rebalance_delay_ms: int = setting("group.initial.rebalance.delay.ms", INT, 0)
    offsets_retention_minutes: int = setting("offsets.retention.minutes", INT, 10080)
    offsets_retention_check_interval_ms: int = setting(
        "offsets.retention.check.interval.ms", LONG, 600000
    )
    offset_metadata_max_bytes: int = setting("offset.metadata.max.bytes", INT, 4096)
    # client quotas: the rate is measured over this many samples of this many seconds
    quota_window_num: int = setting("quota.window.num", INT, 11, at_least(1))
    quota_window_size_seconds: int = setting("quota.window.size.seconds", INT, 1, at_least(1))
    # controller_mutation_rate: a bucket of this many windows' worth of partitions
    controller_quota_window_num: int = setting("controller.quota.window.num", INT, 11, at_least(1))
    controller_quota_window_size_seconds: int = setting(
        "controller.quota.window.size.seconds", INT, 1, at_least(1)
    )
    transaction_max_timeout_ms: int = setting("transaction.max.timeout.ms", INT, 900000)
    transactional_id_expiration_ms: int = setting("transactional.id.expiration.ms", INT, 604800000)
    producer_id_expiration_ms: int = setting("producer.id.expiration.ms", INT, 86400000)
    txn_abort_interval_ms: int = setting(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms", INT, 10000
    )
    log_cleaner_backoff_ms: int = setting("log.cleaner.backoff.ms", LONG, 15000)
    group_coordinator_rebalance_protocols: str = setting(
        "group.coordinator.rebalance.protocols", LIST, "classic,consumer,streams"
    )
    group_consumer_session_timeout_ms: int = setting(
        "group.consumer.session.timeout.ms", INT, 45000
    )
    group_consumer_heartbeat_interval_ms: int = setting(
        "group.consumer.heartbeat.interval.ms", INT, 5000
    )
    group_consumer_max_size: int = setting("group.consumer.max.size", INT, 2147483647)
    group_consumer_min_session_timeout_ms: int = setting(
        "group.consumer.min.session.timeout.ms", INT, 45000
    )
    group_consumer_max_session_timeout_ms: int = setting(
        "group.consumer.max.session.timeout.ms", INT, 60000
    )
    group_consumer_min_heartbeat_interval_ms: int = setting(
        "group.consumer.min.heartbeat.interval.ms", INT, 5000
    )
    group_consumer_max_heartbeat_interval_ms: int = setting(
        "group.consumer.max.heartbeat.interval.ms", INT, 15000
    )
    group_consumer_migration_policy: str = setting(
        "group.consumer.migration.policy", STRING, "bidirectional", one_of(*MIGRATION_POLICIES)
    )
    # share groups (KIP-932)
    group_share_session_timeout_ms: int = setting("group.share.session.timeout.ms", INT, 45000)
    group_share_min_session_timeout_ms: int = setting(
        "group.share.min.session.timeout.ms", INT, 45000
    )
    group_share_max_session_timeout_ms: int = setting(
        "group.share.max.session.timeout.ms", INT, 60000
    )
    group_share_heartbeat_interval_ms: int = setting("group.share.heartbeat.interval.ms", INT, 5000)
    group_share_min_heartbeat_interval_ms: int = setting(
        "group.share.min.heartbeat.interval.ms", INT, 5000
    )
    group_share_max_heartbeat_interval_ms: int = setting(
        "group.share.max.heartbeat.interval.ms", INT, 15000
    )
    group_share_max_size: int = setting("group.share.max.size", INT, 200)
    group_share_delivery_count_limit: int = setting("group.share.delivery.count.limit", INT, 5)
    group_share_partition_max_record_locks: int = setting(
        "group.share.partition.max.record.locks", INT, 2000
    )
    group_share_record_lock_duration_ms: int = setting(
        "group.share.record.lock.duration.ms", INT, 30000
    )
    group_share_min_record_lock_duration_ms: int = setting(
        "group.share.min.record.lock.duration.ms", INT, 15000
    )
    group_share_max_record_lock_duration_ms: int = setting(
        "group.share.max.record.lock.duration.ms", INT, 60000
    )
    share_max_share_sessions: int = setting("group.share.max.share.sessions", INT, 2000)
    # streams groups (KIP-1071)
    group_streams_session_timeout_ms: int = setting("group.streams.session.timeout.ms", INT, 45000)
    group_streams_min_session_timeout_ms: int = setting(
        "group.streams.min.session.timeout.ms", INT, 45000
    )
    group_streams_max_session_timeout_ms: int = setting(
        "group.streams.max.session.timeout.ms", INT, 60000
    )
    group_streams_heartbeat_interval_ms: int = setting(
        "group.streams.heartbeat.interval.ms", INT, 5000
    )
    group_streams_min_heartbeat_interval_ms: int = setting(
        "group.streams.min.heartbeat.interval.ms", INT, 5000
    )
    group_streams_max_heartbeat_interval_ms: int = setting(
        "group.streams.max.heartbeat.interval.ms", INT, 15000
    )
    group_streams_max_size: int = setting("group.streams.max.size", INT, 2147483647)
    group_streams_num_standby_replicas: int = setting("group.streams.num.standby.replicas", INT, 0)
    group_streams_max_standby_replicas: int = setting("group.streams.max.standby.replicas", INT, 2)
    group_streams_initial_rebalance_delay_ms: int = setting(
        "group.streams.initial.rebalance.delay.ms", INT, 3000
    )
    group_streams_assignment_interval_ms: int = setting(
        "group.streams.assignment.interval.ms", INT, 1000
    )
    group_streams_min_assignment_interval_ms: int = setting(
        "group.streams.min.assignment.interval.ms", INT, 0
    )
    group_streams_max_assignment_interval_ms: int = setting(
        "group.streams.max.assignment.interval.ms", INT, 15000
    )
    # how often members report their changelog offsets (the heartbeat tells them)
    group_streams_task_offset_interval_ms: int = setting(
        "group.streams.task.offset.interval.ms", INT, 60000
    )
    group_streams_min_task_offset_interval_ms: int = setting(
        "group.streams.min.task.offset.interval.ms", INT, 15000
    )
    # Kafka 4.4 validates and stores these, but its assignment refiner hands out no
    # warm-up task whatever they say
    group_streams_num_warmup_replicas: int = setting("group.streams.num.warmup.replicas", INT, 2)
    group_streams_max_warmup_replicas: int = setting("group.streams.max.warmup.replicas", INT, 20)
    group_streams_acceptable_recovery_lag: int = setting(
        "group.streams.acceptable.recovery.lag", LONG, 10000
    )
    group_streams_rack_aware_assignment_tags: str = setting(
        "group.streams.rack.aware.assignment.tags", LIST, "", distinct_tags
    )
    # the built-in ones; the first is the default
    group_streams_assignors: str = setting(
        "group.streams.assignors", LIST, "sticky", streams_assignors
    )
    group_streams_assignor_offload_enable: bool = setting(
        "group.streams.assignor.offload.enable", BOOLEAN, True
    )
    share_coordinator_state_topic_num_partitions: int = setting(
        "share.coordinator.state.topic.num.partitions", INT, 50
    )
    share_coordinator_snapshot_update_records_per_snapshot: int = setting(
        "share.coordinator.snapshot.update.records.per.snapshot", INT, 500
    )
    share_coordinator_state_topic_prune_interval_ms: int = setting(
        "share.coordinator.state.topic.prune.interval.ms", INT, 300000
    )
    # DescribeTopicPartitions' page size cap
    max_request_partition_size_limit: int = setting("max.request.partition.size.limit", INT, 2000)
    # the largest metrics push a client may send
    telemetry_max_bytes: int = setting("telemetry.max.bytes", INT, 1048576)
    # delegation tokens only when set (an empty key turns them off, as on Kafka)
    delegation_token_secret_key: str | None = setting(
        "delegation.token.secret.key", PASSWORD, None, none_if_empty
    )
    delegation_token_max_lifetime_ms: int = setting(
        "delegation.token.max.lifetime.ms", LONG, 604800000
    )
    delegation_token_expiry_time_ms: int = setting(
        "delegation.token.expiry.time.ms", LONG, 86400000
    )
    delegation_token_expiry_check_interval_ms: int = setting(
        "delegation.token.expiry.check.interval.ms", LONG, 3600000
    )
    max_connections: int = setting("max.connections", INT, 2147483647)
    max_connections_per_ip: int = setting("max.connections.per.ip", INT, 2147483647)
    max_connections_per_ip_overrides: str = setting("max.connections.per.ip.overrides", STRING, "")
    # Kafka's default is 50, for an acceptor thread that does nothing else; one event
    # loop that also serves requests accepts in bursts, so clients that connect many at
    # once would overflow 50 and wait for SYN retries (a second each).
    socket_listen_backlog_size: int = setting("socket.listen.backlog.size", INT, 1024)
    connections_max_idle_ms: int = setting("connections.max.idle.ms", LONG, 600000)
    # Kafka settings given but not used here, with their values
    unused: dict[str, str] = field(default_factory=dict)
    # every setting as given (security settings are read from here, per listener)
    raw: dict[str, str] = field(default_factory=dict)

    def apply(self, settings: Mapping[str, str]) -> None:
        """Set values given by Kafka name; raises ConfigError for unknown names and
        values that do not parse or are out of bounds."""
        for name, raw in settings.items():
            self.raw[name] = raw
            found = SETTINGS.get(name)
            if found is None:
                if not is_kafka_setting(name):
                    raise ConfigError(f"{name}: not a Kafka broker setting")
                if _base_setting(name) not in READ_BY_SECURITY:
                    self.unused[name] = raw
                continue
            attribute, declared = found
            try:
                setattr(self, attribute, declared.parse(raw))
            except ValueError as exc:
                raise ConfigError(f"{name}={raw!r}: {exc}") from None
        for attribute, declared in _DECLARED:
            value = getattr(self, attribute)
            for check in declared.checks:
                value = check(declared.name, value)
            setattr(self, attribute, value)
        for low, high in ORDERED:
            if getattr(self, SETTINGS[low][0]) > getattr(self, SETTINGS[high][0]):
                raise ConfigError(f"{low} must not be greater than {high}")

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


# (attribute, declaration) of every field that a Kafka setting sets, in field order
_DECLARED = [
    (f.name, declared)
    for f in fields(BrokerConfig)
    if (declared := declared_setting(f.metadata)) is not None
]
# Kafka name -> (attribute, declaration), for every setting the broker reads
SETTINGS: dict[str, tuple[str, Setting]] = {
    name: (attribute, declared) for attribute, declared in _DECLARED for name in declared.names
}
# Every Kafka broker setting: the ones read here, by broker/security, and the others
KAFKA_BROKER_SETTINGS = frozenset(SETTINGS) | READ_BY_SECURITY | NOT_READ
# Settings checked against each other, as Kafka 4.4 checks them: low <= high
ORDERED = (
    ("group.streams.min.assignment.interval.ms", "group.streams.assignment.interval.ms"),
    ("group.streams.assignment.interval.ms", "group.streams.max.assignment.interval.ms"),
    ("group.streams.min.task.offset.interval.ms", "group.streams.task.offset.interval.ms"),
    ("group.streams.num.warmup.replicas", "group.streams.max.warmup.replicas"),
)


def _base_setting(name: str) -> str:
    """The setting without its listener and mechanism prefixes."""
    per_listener = _PER_LISTENER.match(name)
    if per_listener is not None:
        name = per_listener.group(1)
    per_mechanism = _PER_MECHANISM.match(name)
    return per_mechanism.group(1) if per_mechanism is not None else name


def is_kafka_setting(name: str) -> bool:
    if name in KAFKA_BROKER_SETTINGS:
        return True
    if name.startswith(OTHER_DISTRIBUTION_PREFIXES):
        return True
    per_listener = _PER_LISTENER.match(name)
    if per_listener is not None:
        return is_kafka_setting(per_listener.group(1))
    per_mechanism = _PER_MECHANISM.match(name)
    return per_mechanism is not None and per_mechanism.group(1) in KAFKA_BROKER_SETTINGS
