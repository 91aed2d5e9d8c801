"""The settings of the coordinators (classic, consumer, share and streams groups,
committed offsets, transactions) and of their internal topics: the part of BrokerConfig
(config.py) that the group, share and transaction coordinators read, each declared once
on its field (setting.py)."""

from __future__ import annotations

from dataclasses import dataclass

from odradek.broker.settings.setting import (
    BOOLEAN,
    INT,
    LIST,
    LONG,
    SHORT,
    STRING,
    distinct_tags,
    one_of,
    setting,
    streams_assignors,
)

MIGRATION_POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")


@dataclass
class CoordinatorSettings:
    """BrokerConfig's coordinator settings (BrokerConfig is one of these)."""

    offsets_topic_replication_factor: int = setting(
        "offsets.topic.replication.factor",
        SHORT,
        3,
        doc=(
            "How many replicas __consumer_offsets gets in a cluster; a node of its own keeps "
            "one copy."
        ),
    )
    transaction_state_log_replication_factor: int = setting(
        "transaction.state.log.replication.factor",
        SHORT,
        3,
        doc=(
            "How many replicas __transaction_state gets in a cluster; a node of its own keeps "
            "one copy."
        ),
    )
    transaction_state_log_min_isr: int = setting(
        "transaction.state.log.min.isr",
        INT,
        2,
        doc="The min.insync.replicas of __transaction_state, in a cluster.",
    )
    offsets_topic_num_partitions: int = setting(
        "offsets.topic.num.partitions",
        INT,
        50,
        doc=(
            "How many partitions __consumer_offsets is created with; they spread the groups "
            "over the group coordinator's shards (a topic that exists keeps its own count)."
        ),
    )
    transaction_state_log_num_partitions: int = setting(
        "transaction.state.log.num.partitions",
        INT,
        50,
        doc=(
            "How many partitions __transaction_state is created with; they spread the "
            "transactional ids over the transaction coordinator's shards."
        ),
    )
    group_min_session_timeout_ms: int = setting(
        "group.min.session.timeout.ms",
        INT,
        6000,
        doc=(
            "The shortest session timeout, in milliseconds, a member of a classic group may "
            "ask for when it joins."
        ),
    )
    group_max_session_timeout_ms: int = setting(
        "group.max.session.timeout.ms",
        INT,
        1800000,
        doc=(
            "The longest session timeout, in milliseconds, a member of a classic group may "
            "ask for when it joins."
        ),
    )
    # Kafka's code default is 3000; its shipped server.properties, which a test broker
    # follows, sets 0 so that the first consumers of a group do not wait three seconds.
    group_initial_rebalance_delay_ms: int = setting(
        "group.initial.rebalance.delay.ms",
        INT,
        0,
        doc=(
            "How long, in milliseconds, a classic group that was empty waits for more members "
            "before its first rebalance. Odradek defaults to 0, as Kafka's shipped "
            "server.properties sets it (Kafka's own default is 3000)."
        ),
    )
    offsets_retention_minutes: int = setting(
        "offsets.retention.minutes",
        INT,
        10080,
        doc=(
            "How long, in minutes, a committed offset is kept after its commit; the offsets "
            "of a group whose members still hold them are kept whatever their age."
        ),
    )
    offsets_retention_check_interval_ms: int = setting(
        "offsets.retention.check.interval.ms",
        LONG,
        600000,
        doc=(
            "How often, in milliseconds, the group coordinator removes committed offsets past "
            "their retention."
        ),
    )
    offset_metadata_max_bytes: int = setting(
        "offset.metadata.max.bytes",
        INT,
        4096,
        doc=(
            "The longest metadata string, in bytes, an offset commit may carry; a longer one "
            "is refused with OFFSET_METADATA_TOO_LARGE."
        ),
    )
    transaction_max_timeout_ms: int = setting(
        "transaction.max.timeout.ms",
        INT,
        900000,
        doc=(
            "The longest transaction timeout, in milliseconds, a producer may ask for; a "
            "longer one is refused with INVALID_TRANSACTION_TIMEOUT."
        ),
    )
    transactional_id_expiration_ms: int = setting(
        "transactional.id.expiration.ms",
        INT,
        604800000,
        doc=(
            "How long, in milliseconds, the coordinator keeps a transactional id that has had "
            "no transaction before it forgets it."
        ),
    )
    txn_abort_interval_ms: int = setting(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        INT,
        10000,
        doc=(
            "How often, in milliseconds, the transaction coordinator looks for transactions "
            "past their timeout and aborts them."
        ),
    )
    group_coordinator_rebalance_protocols: str = setting(
        "group.coordinator.rebalance.protocols",
        LIST,
        "classic,consumer,streams",
        doc=(
            "Which group protocols the broker serves: classic, consumer and streams. Without "
            "consumer, the consumer group APIs are not offered; without streams, streams "
            "group heartbeats are refused."
        ),
    )
    group_consumer_session_timeout_ms: int = setting(
        "group.consumer.session.timeout.ms",
        INT,
        45000,
        doc=(
            "How long, in milliseconds, a member of a consumer group may go without a "
            "heartbeat before it is removed; a group's consumer.session.timeout.ms overrides "
            "it."
        ),
    )
    group_consumer_heartbeat_interval_ms: int = setting(
        "group.consumer.heartbeat.interval.ms",
        INT,
        5000,
        doc=(
            "How often, in milliseconds, members of a consumer group are told to heartbeat; a "
            "group's consumer.heartbeat.interval.ms overrides it."
        ),
    )
    group_consumer_max_size: int = setting(
        "group.consumer.max.size",
        INT,
        2147483647,
        doc=(
            "The most members a consumer group may have; one more is refused with "
            "GROUP_MAX_SIZE_REACHED."
        ),
    )
    group_consumer_min_session_timeout_ms: int = setting(
        "group.consumer.min.session.timeout.ms",
        INT,
        45000,
        doc="The shortest consumer.session.timeout.ms a group may be given.",
    )
    group_consumer_max_session_timeout_ms: int = setting(
        "group.consumer.max.session.timeout.ms",
        INT,
        60000,
        doc="The longest consumer.session.timeout.ms a group may be given.",
    )
    group_consumer_min_heartbeat_interval_ms: int = setting(
        "group.consumer.min.heartbeat.interval.ms",
        INT,
        5000,
        doc="The shortest consumer.heartbeat.interval.ms a group may be given.",
    )
    group_consumer_max_heartbeat_interval_ms: int = setting(
        "group.consumer.max.heartbeat.interval.ms",
        INT,
        15000,
        doc="The longest consumer.heartbeat.interval.ms a group may be given.",
    )
    group_consumer_migration_policy: str = setting(
        "group.consumer.migration.policy",
        STRING,
        "bidirectional",
        one_of(*MIGRATION_POLICIES),
        doc=(
            "Whether a group may change between the classic and the consumer protocol as its "
            "members do: disabled, upgrade (classic to consumer), downgrade (back) or "
            "bidirectional."
        ),
    )
    # share groups (KIP-932)
    group_share_session_timeout_ms: int = setting(
        "group.share.session.timeout.ms",
        INT,
        45000,
        doc=(
            "How long, in milliseconds, a member of a share group may go without a heartbeat "
            "before it is removed; a group's share.session.timeout.ms overrides it."
        ),
    )
    group_share_min_session_timeout_ms: int = setting(
        "group.share.min.session.timeout.ms",
        INT,
        45000,
        doc="The shortest share.session.timeout.ms a group may be given.",
    )
    group_share_max_session_timeout_ms: int = setting(
        "group.share.max.session.timeout.ms",
        INT,
        60000,
        doc="The longest share.session.timeout.ms a group may be given.",
    )
    group_share_heartbeat_interval_ms: int = setting(
        "group.share.heartbeat.interval.ms",
        INT,
        5000,
        doc=(
            "How often, in milliseconds, members of a share group are told to heartbeat; a "
            "group's share.heartbeat.interval.ms overrides it."
        ),
    )
    group_share_min_heartbeat_interval_ms: int = setting(
        "group.share.min.heartbeat.interval.ms",
        INT,
        5000,
        doc="The shortest share.heartbeat.interval.ms a group may be given.",
    )
    group_share_max_heartbeat_interval_ms: int = setting(
        "group.share.max.heartbeat.interval.ms",
        INT,
        15000,
        doc="The longest share.heartbeat.interval.ms a group may be given.",
    )
    group_share_max_size: int = setting(
        "group.share.max.size",
        INT,
        200,
        doc=(
            "The most members a share group may have; one more is refused with "
            "GROUP_MAX_SIZE_REACHED."
        ),
    )
    group_share_delivery_count_limit: int = setting(
        "group.share.delivery.count.limit",
        INT,
        5,
        doc=(
            "How many times a record is delivered to a share group's consumers before, "
            "unacknowledged, it is archived and not delivered again."
        ),
    )
    group_share_partition_max_record_locks: int = setting(
        "group.share.partition.max.record.locks",
        INT,
        2000,
        doc=(
            "How many records of one share-partition may be in flight at once: delivered to "
            "its consumers and not yet all settled."
        ),
    )
    group_share_record_lock_duration_ms: int = setting(
        "group.share.record.lock.duration.ms",
        INT,
        30000,
        doc=(
            "How long, in milliseconds, a consumer of a share group holds the records it "
            "fetched before they go back to be delivered again; a group's "
            "share.record.lock.duration.ms overrides it."
        ),
    )
    group_share_min_record_lock_duration_ms: int = setting(
        "group.share.min.record.lock.duration.ms",
        INT,
        15000,
        doc="The shortest share.record.lock.duration.ms a group may be given.",
    )
    group_share_max_record_lock_duration_ms: int = setting(
        "group.share.max.record.lock.duration.ms",
        INT,
        60000,
        doc="The longest share.record.lock.duration.ms a group may be given.",
    )
    share_max_share_sessions: int = setting(
        "group.share.max.share.sessions",
        INT,
        2000,
        doc=(
            "How many share fetch sessions the broker keeps at once; a new one beyond that is "
            "refused."
        ),
    )
    # streams groups (KIP-1071)
    group_streams_session_timeout_ms: int = setting(
        "group.streams.session.timeout.ms",
        INT,
        45000,
        doc=(
            "How long, in milliseconds, a member of a streams group may go without a "
            "heartbeat before it is removed; a group's streams.session.timeout.ms overrides "
            "it."
        ),
    )
    group_streams_min_session_timeout_ms: int = setting(
        "group.streams.min.session.timeout.ms",
        INT,
        45000,
        doc="The shortest streams.session.timeout.ms a group may be given.",
    )
    group_streams_max_session_timeout_ms: int = setting(
        "group.streams.max.session.timeout.ms",
        INT,
        60000,
        doc="The longest streams.session.timeout.ms a group may be given.",
    )
    group_streams_heartbeat_interval_ms: int = setting(
        "group.streams.heartbeat.interval.ms",
        INT,
        5000,
        doc=(
            "How often, in milliseconds, members of a streams group are told to heartbeat; a "
            "group's streams.heartbeat.interval.ms overrides it."
        ),
    )
    group_streams_min_heartbeat_interval_ms: int = setting(
        "group.streams.min.heartbeat.interval.ms",
        INT,
        5000,
        doc="The shortest streams.heartbeat.interval.ms a group may be given.",
    )
    group_streams_max_heartbeat_interval_ms: int = setting(
        "group.streams.max.heartbeat.interval.ms",
        INT,
        15000,
        doc="The longest streams.heartbeat.interval.ms a group may be given.",
    )
    group_streams_max_size: int = setting(
        "group.streams.max.size",
        INT,
        2147483647,
        doc=(
            "The most members a streams group may have; one more is refused with "
            "GROUP_MAX_SIZE_REACHED."
        ),
    )
    group_streams_num_standby_replicas: int = setting(
        "group.streams.num.standby.replicas",
        INT,
        0,
        doc=(
            "How many standby copies of each stateful task a streams group's assignment "
            "places; a group's streams.num.standby.replicas overrides it."
        ),
    )
    group_streams_max_standby_replicas: int = setting(
        "group.streams.max.standby.replicas",
        INT,
        2,
        doc="The most streams.num.standby.replicas a group may be given.",
    )
    group_streams_initial_rebalance_delay_ms: int = setting(
        "group.streams.initial.rebalance.delay.ms",
        INT,
        3000,
        doc=(
            "How long, in milliseconds, a streams group that was empty waits for more members "
            "before it computes its first assignment."
        ),
    )
    group_streams_assignment_interval_ms: int = setting(
        "group.streams.assignment.interval.ms",
        INT,
        1000,
        doc=(
            "How long, in milliseconds, a streams group waits at least between two new "
            "assignments; a group's streams.assignment.interval.ms overrides it."
        ),
    )
    group_streams_min_assignment_interval_ms: int = setting(
        "group.streams.min.assignment.interval.ms",
        INT,
        0,
        doc="The shortest streams.assignment.interval.ms a group may be given.",
    )
    group_streams_max_assignment_interval_ms: int = setting(
        "group.streams.max.assignment.interval.ms",
        INT,
        15000,
        doc="The longest streams.assignment.interval.ms a group may be given.",
    )
    group_streams_task_offset_interval_ms: int = setting(
        "group.streams.task.offset.interval.ms",
        INT,
        60000,
        doc=(
            "How often, in milliseconds, members of a streams group are told to report the "
            "offsets of their tasks' changelogs."
        ),
    )
    group_streams_min_task_offset_interval_ms: int = setting(
        "group.streams.min.task.offset.interval.ms",
        INT,
        15000,
        doc="The shortest streams.task.offset.interval.ms a group may be given.",
    )
    # Kafka 4.4 validates and stores these, but its assignment refiner hands out no
    # warm-up task whatever they say
    group_streams_num_warmup_replicas: int = setting(
        "group.streams.num.warmup.replicas",
        INT,
        2,
        doc=(
            "How many warm-up copies of a task a streams group may have. Accepted and passed "
            "on as Kafka 4.4 does, whose assignment hands out no warm-up task, so neither "
            "does Odradek's."
        ),
    )
    group_streams_max_warmup_replicas: int = setting(
        "group.streams.max.warmup.replicas",
        INT,
        20,
        doc="The most streams.num.warmup.replicas a group may be given.",
    )
    group_streams_acceptable_recovery_lag: int = setting(
        "group.streams.acceptable.recovery.lag",
        LONG,
        10000,
        doc=(
            "How far, in records, a member's copy of a task's state may lag and still count "
            "as caught up; members are told it in their heartbeats."
        ),
    )
    group_streams_rack_aware_assignment_tags: str = setting(
        "group.streams.rack.aware.assignment.tags",
        LIST,
        "",
        distinct_tags,
        doc=(
            "The client tags every member of a streams group must send; members missing one "
            "are told so in their heartbeat. The assignment does not place standbys by them "
            "(as in Kafka 4.4)."
        ),
    )
    group_streams_assignors: str = setting(
        "group.streams.assignors",
        LIST,
        "sticky",
        streams_assignors,
        doc=(
            "The task assignors streams groups may use; the first is the default. Odradek has "
            "the built-in sticky assignor only."
        ),
    )
    group_streams_assignor_offload_enable: bool = setting(
        "group.streams.assignor.offload.enable",
        BOOLEAN,
        True,
        doc=(
            "Whether a streams group's assignment may be computed away from the heartbeats "
            "that need it. Odradek accepts and describes it but does not act on it."
        ),
    )
    share_coordinator_state_topic_num_partitions: int = setting(
        "share.coordinator.state.topic.num.partitions",
        INT,
        50,
        doc=(
            "How many partitions __share_group_state is created with; they spread the "
            "share-partitions' state over the share coordinator's shards."
        ),
    )
    share_coordinator_snapshot_update_records_per_snapshot: int = setting(
        "share.coordinator.snapshot.update.records.per.snapshot",
        INT,
        500,
        doc=(
            "After how many updates to a share-partition's state the share coordinator writes "
            "the whole state again as a snapshot."
        ),
    )
    share_coordinator_state_topic_prune_interval_ms: int = setting(
        "share.coordinator.state.topic.prune.interval.ms",
        INT,
        300000,
        doc=(
            "How often, in milliseconds, records of __share_group_state that no state needs "
            "any more are deleted."
        ),
    )
