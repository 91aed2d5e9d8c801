"""The settings of topics and their logs: the defaults of every topic's configs
(segments, retention, flushing, cleanup), how topics are created and deleted, and how
followers replicate them. The part of BrokerConfig (config.py) the data plane reads, each
declared once on its field (setting.py)."""

from __future__ import annotations

from dataclasses import dataclass

from odradek.broker.settings.setting import BOOLEAN, INT, LIST, LONG, STRING, at_least, setting
from odradek.storage import LogConfig

HOUR_MS = 3600 * 1000


@dataclass
class LogSettings:
    """BrokerConfig's topic and log settings (BrokerConfig is one of these)."""

    num_partitions: int = setting(
        "num.partitions",
        INT,
        1,
        doc=(
            "How many partitions a topic gets when it is created without a count "
            "(auto-created, or created asking for the default)."
        ),
    )
    auto_create_topics: bool = setting(
        "auto.create.topics.enable",
        BOOLEAN,
        True,
        doc=(
            "Whether a Metadata request that names an unknown topic creates it (when the "
            "request allows it), with the default partitions and replication factor."
        ),
    )
    delete_topic_enable: bool = setting(
        "delete.topic.enable",
        BOOLEAN,
        True,
        doc=(
            "Whether topics may be deleted; when false, DeleteTopics is refused with "
            "TOPIC_DELETION_DISABLED."
        ),
    )
    message_max_bytes: int = setting(
        "message.max.bytes",
        INT,
        1048588,
        doc=(
            "The largest record batch, in bytes, a topic accepts unless its own "
            "max.message.bytes says otherwise."
        ),
    )
    log_segment_bytes: int = setting(
        "log.segment.bytes",
        INT,
        1073741824,
        doc=(
            "The size, in bytes, at which a partition's log starts a new segment; the default "
            "of a topic's segment.bytes."
        ),
    )
    log_roll_ms: int | None = setting(
        "log.roll.ms",
        LONG,
        None,
        doc=(
            "How old, in milliseconds, a segment may grow before the log starts a new one; "
            "unset, log.roll.hours says. The default of a topic's segment.ms."
        ),
    )
    log_roll_hours: int = setting(
        "log.roll.hours",
        INT,
        168,
        doc=(
            "How old, in hours, a segment may grow before the log starts a new one, when "
            "log.roll.ms is not set."
        ),
    )
    log_retention_ms: int | None = setting(
        "log.retention.ms",
        LONG,
        None,
        doc=(
            "How long, in milliseconds, records are kept before their segment is deleted (-1: "
            "forever); it wins over log.retention.minutes and log.retention.hours. The "
            "default of a topic's retention.ms."
        ),
    )
    log_retention_minutes: int | None = setting(
        "log.retention.minutes",
        INT,
        None,
        doc=(
            "How long, in minutes, records are kept when log.retention.ms is not set; it wins "
            "over log.retention.hours."
        ),
    )
    log_retention_hours: int = setting(
        "log.retention.hours",
        INT,
        168,
        doc=(
            "How long, in hours, records are kept when neither log.retention.ms nor "
            "log.retention.minutes is set."
        ),
    )
    log_retention_bytes: int = setting(
        "log.retention.bytes",
        LONG,
        -1,
        doc=(
            "How large, in bytes, a partition's log may grow before its oldest segments are "
            "deleted (-1: no limit); the default of a topic's retention.bytes."
        ),
    )
    log_retention_check_interval_ms: int = setting(
        "log.retention.check.interval.ms",
        LONG,
        300000,
        doc=(
            "How often, in milliseconds, the broker looks for segments past their retention "
            "and deletes them."
        ),
    )
    log_index_interval_bytes: int = setting(
        "log.index.interval.bytes",
        INT,
        4096,
        doc=(
            "How many bytes of records lie between two entries of a segment's sparse offset "
            "and time indexes; the default of a topic's index.interval.bytes."
        ),
    )
    log_flush_interval_messages: int | None = setting(
        "log.flush.interval.messages",
        LONG,
        None,
        doc=(
            "After how many appended records a partition's log is written to disk (fsync); "
            "unset, Odradek leaves that to the operating system. The default of a topic's "
            "flush.messages."
        ),
    )
    log_flush_interval_ms: int | None = setting(
        "log.flush.interval.ms",
        LONG,
        None,
        doc=(
            "How long, in milliseconds, appended records may wait before they are written to "
            "disk (fsync); unset, Odradek leaves that to the operating system. The default of "
            "a topic's flush.ms."
        ),
    )
    log_cleanup_policy: str = setting(
        "log.cleanup.policy",
        LIST,
        "delete",
        doc=(
            "What happens to a topic's old records: delete removes segments past retention, "
            "compact keeps the latest record of each key, or both. The default of a topic's "
            "cleanup.policy."
        ),
    )
    log_message_timestamp_type: str = setting(
        "log.message.timestamp.type",
        STRING,
        "CreateTime",
        doc=(
            "Which timestamp records carry: CreateTime keeps the producer's, LogAppendTime "
            "stamps the broker's clock at append. The default of a topic's "
            "message.timestamp.type."
        ),
    )
    min_insync_replicas: int = setting(
        "min.insync.replicas",
        INT,
        1,
        doc=(
            "How many in-sync replicas a partition needs for a produce with acks=all to "
            "succeed; the default of a topic's min.insync.replicas."
        ),
    )
    default_replication_factor: int = setting(
        "default.replication.factor",
        INT,
        1,
        doc=(
            "How many replicas a topic's partitions get when it is created without a "
            "replication factor, in a cluster; a node of its own keeps one copy."
        ),
    )
    replica_lag_time_max_ms: int = setting(
        "replica.lag.time.max.ms",
        LONG,
        30000,
        doc=(
            "How long, in milliseconds, a follower may go without catching up with the leader "
            "before it leaves the partition's in-sync replicas."
        ),
    )
    replica_fetch_wait_max_ms: int = setting(
        "replica.fetch.wait.max.ms",
        INT,
        500,
        doc=(
            "How long, in milliseconds, a follower's fetch from the leader waits for new "
            "records before it is answered."
        ),
    )
    replica_fetch_min_bytes: int = setting(
        "replica.fetch.min.bytes",
        INT,
        1,
        doc=(
            "How many bytes a follower's fetch from the leader waits for before it is "
            "answered (or until replica.fetch.wait.max.ms)."
        ),
    )
    replication_quota_window_num: int = setting(
        "replication.quota.window.num",
        INT,
        11,
        at_least(1),
        doc=(
            "How many samples the replication throttles' rates "
            "(leader.replication.throttled.rate, follower.replication.throttled.rate) are "
            "measured over."
        ),
    )
    replication_quota_window_size_seconds: int = setting(
        "replication.quota.window.size.seconds",
        INT,
        1,
        at_least(1),
        doc="How long, in seconds, each sample of a replication throttle's rate lasts.",
    )
    producer_id_expiration_ms: int = setting(
        "producer.id.expiration.ms",
        INT,
        86400000,
        doc=(
            "How long, in milliseconds, a partition keeps the state of a producer id (its "
            "sequence numbers) after its last write."
        ),
    )
    log_cleaner_backoff_ms: int = setting(
        "log.cleaner.backoff.ms",
        LONG,
        15000,
        doc="How long, in milliseconds, the compaction of compacted topics rests between passes.",
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
