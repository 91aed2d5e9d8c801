"""Topic-level configs: names Kafka accepts, their defaults, and how they are described.

A topic stores only the configs set on it; every other name falls back to the
broker's setting (shown with source DEFAULT_CONFIG, or STATIC_BROKER_CONFIG when
the broker's own configuration changed it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from odradek.broker.settings.config import BrokerConfig


class TopicError(Exception):
    """A topic request refused: carries the Kafka error code to answer with."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# ConfigSource values of DescribeConfigs
DYNAMIC_TOPIC_CONFIG = 1
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5

INVALID_CONFIG = 40


@dataclass(frozen=True)
class TopicConfigDef:
    broker_name: str | None  # the broker setting that provides the default
    default: Callable[[BrokerConfig], str]
    type_name: str  # int, long, string, boolean, double, list, class
    doc: str  # what the config does in Odradek (DescribeConfigs' documentation)


def _const(value: str) -> Callable[[BrokerConfig], str]:
    return lambda _config: value


def _opt(value: int | None, fallback: str) -> str:
    return fallback if value is None else str(value)


LONG_MAX = str((1 << 63) - 1)

DEFINITIONS: dict[str, TopicConfigDef] = {
    "cleanup.policy": TopicConfigDef(
        "log.cleanup.policy",
        lambda c: c.log_cleanup_policy,
        "list",
        doc=(
            "What happens to the topic's old records: delete removes segments past "
            "retention, compact keeps the latest record of each key, and compact,delete "
            "does both."
        ),
    ),
    "compression.type": TopicConfigDef(
        "compression.type",
        _const("producer"),
        "string",
        doc=(
            "The compression the topic's batches are to be stored with. Odradek keeps every "
            "batch as its producer compressed it: it stores and describes this value "
            "without acting on it."
        ),
    ),
    "delete.retention.ms": TopicConfigDef(
        "log.cleaner.delete.retention.ms",
        _const("86400000"),
        "long",
        doc=(
            "How long, in milliseconds, compaction keeps delete markers (records without a "
            "value) and transaction markers once it has reached them, so that slow "
            "consumers still see them."
        ),
    ),
    "file.delete.delay.ms": TopicConfigDef(
        "log.segment.delete.delay.ms",
        _const("60000"),
        "long",
        doc=(
            "How long Kafka waits before removing the files of a deleted segment. Odradek "
            "stores and describes it without acting on it."
        ),
    ),
    "flush.messages": TopicConfigDef(
        "log.flush.interval.messages",
        lambda c: _opt(c.log_flush_interval_messages, LONG_MAX),
        "long",
        doc=(
            "After how many appended records the partition's log is written to disk "
            "(fsync); the largest long, the default, leaves that to the operating system."
        ),
    ),
    "flush.ms": TopicConfigDef(
        "log.flush.interval.ms",
        lambda c: _opt(c.log_flush_interval_ms, LONG_MAX),
        "long",
        doc=(
            "How long, in milliseconds, appended records may wait before the log is written "
            "to disk (fsync); the largest long, the default, leaves that to the operating "
            "system."
        ),
    ),
    "index.interval.bytes": TopicConfigDef(
        "log.index.interval.bytes",
        lambda c: str(c.log_index_interval_bytes),
        "int",
        doc=(
            "How many bytes of records lie between two entries of a segment's sparse offset "
            "and time indexes."
        ),
    ),
    "max.compaction.lag.ms": TopicConfigDef(
        "log.cleaner.max.compaction.lag.ms",
        _const(LONG_MAX),
        "long",
        doc=(
            "The longest a record may stay uncompacted in Kafka. Odradek stores and "
            "describes it without acting on it: its compaction runs on the dirty ratio."
        ),
    ),
    "max.message.bytes": TopicConfigDef(
        "message.max.bytes",
        lambda c: str(c.message_max_bytes),
        "int",
        doc=(
            "The largest record batch, in bytes, the topic accepts; a larger one is refused "
            "with MESSAGE_TOO_LARGE."
        ),
    ),
    "message.timestamp.type": TopicConfigDef(
        "log.message.timestamp.type",
        lambda c: c.log_message_timestamp_type,
        "string",
        doc=(
            "Which timestamp the topic's records carry: CreateTime keeps the producer's, "
            "LogAppendTime replaces it with the broker's clock at append."
        ),
    ),
    "message.timestamp.before.max.ms": TopicConfigDef(
        "log.message.timestamp.before.max.ms",
        _const(LONG_MAX),
        "long",
        doc=(
            "How far, in milliseconds, a CreateTime record's timestamp may lie before the "
            "broker's clock; an older one is refused with INVALID_TIMESTAMP."
        ),
    ),
    "message.timestamp.after.max.ms": TopicConfigDef(
        "log.message.timestamp.after.max.ms",
        _const(LONG_MAX),
        "long",
        doc=(
            "How far, in milliseconds, a CreateTime record's timestamp may lie after the "
            "broker's clock; a later one is refused with INVALID_TIMESTAMP. Unlimited by "
            "default in Odradek, where Kafka 4.4 allows one hour."
        ),
    ),
    "min.cleanable.dirty.ratio": TopicConfigDef(
        "log.cleaner.min.cleanable.ratio",
        _const("0.5"),
        "double",
        doc=(
            "The share of a compacted log, from 0 to 1, that must be written since its last "
            "compaction before it is compacted again."
        ),
    ),
    "min.compaction.lag.ms": TopicConfigDef(
        "log.cleaner.min.compaction.lag.ms",
        _const("0"),
        "long",
        doc=(
            "How long, in milliseconds, a record stays as written before compaction may remove it."
        ),
    ),
    "min.insync.replicas": TopicConfigDef(
        "min.insync.replicas",
        lambda c: str(c.min_insync_replicas),
        "int",
        doc=(
            "How many in-sync replicas a partition needs for a produce with acks=all to "
            "succeed; with fewer it is refused with NOT_ENOUGH_REPLICAS."
        ),
    ),
    "preallocate": TopicConfigDef(
        "log.preallocate",
        _const("false"),
        "boolean",
        doc=(
            "Whether Kafka reserves the disk space of a new segment when it creates it. "
            "Odradek stores and describes it without acting on it."
        ),
    ),
    "retention.bytes": TopicConfigDef(
        "log.retention.bytes",
        lambda c: str(c.log_retention_bytes),
        "long",
        doc=(
            "How large, in bytes, a partition's log may grow before its oldest segments are "
            "deleted (-1: no limit), under the delete cleanup policy."
        ),
    ),
    "retention.ms": TopicConfigDef(
        "log.retention.ms",
        lambda c: str(c.retention_ms()),
        "long",
        doc=(
            "How long, in milliseconds, records are kept before their segment is deleted "
            "(-1: forever), under the delete cleanup policy."
        ),
    ),
    "segment.bytes": TopicConfigDef(
        "log.segment.bytes",
        lambda c: str(c.log_segment_bytes),
        "int",
        doc=(
            "The size, in bytes, at which a partition's log closes its segment and starts a "
            "new one."
        ),
    ),
    "segment.index.bytes": TopicConfigDef(
        "log.index.size.max.bytes",
        _const("10485760"),
        "int",
        doc=(
            "The size Kafka gives a segment's index files. Odradek stores and describes it "
            "without acting on it."
        ),
    ),
    "segment.jitter.ms": TopicConfigDef(
        "log.roll.jitter.ms",
        _const("0"),
        "long",
        doc=(
            "A random time Kafka takes off segment.ms so that segments do not all roll at "
            "once. Odradek stores and describes it without acting on it."
        ),
    ),
    "segment.ms": TopicConfigDef(
        "log.roll.ms",
        lambda c: str(c.log_config().segment_ms),
        "long",
        doc=(
            "How old, in milliseconds, a segment may grow before the log starts a new one, "
            "so that retention and compaction can reach its records."
        ),
    ),
    "leader.replication.throttled.replicas": TopicConfigDef(
        None,
        _const(""),
        "list",
        doc=(
            "The replicas whose leader holds the fetches of out-of-sync followers to the "
            "broker's leader.replication.throttled.rate: a list of partition:broker pairs "
            "(the broker is the leader), or * for every replica of the topic. "
            "kafka-reassign-partitions --throttle sets it for the replicas a move reads from."
        ),
    ),
    "follower.replication.throttled.replicas": TopicConfigDef(
        None,
        _const(""),
        "list",
        doc=(
            "The replicas whose follower, while out of sync, fetches no faster than its "
            "broker's follower.replication.throttled.rate: a list of partition:broker pairs "
            "(the broker is the follower), or * for every replica of the topic. "
            "kafka-reassign-partitions --throttle sets it for the replicas a move adds."
        ),
    ),
    "unclean.leader.election.enable": TopicConfigDef(
        "unclean.leader.election.enable",
        _const("false"),
        "boolean",
        doc=(
            "Whether, in a cluster, a replica outside the in-sync set may become a "
            "partition's leader when no in-sync one is left, at the cost of the records it "
            "lacks."
        ),
    ),
}

_BROKER_DEFAULTS = BrokerConfig()

# The order Kafka 4.4 answers a topic's configs in, in DescribeConfigs: they sit in a
# Java HashMap, so the order is that map's, the same from one run to the next.
# (CreateTopics answers them by name.)
DESCRIBE_ORDER = (
    "compression.type",
    "min.insync.replicas",
    "segment.jitter.ms",
    "cleanup.policy",
    "flush.ms",
    "segment.bytes",
    "retention.ms",
    "flush.messages",
    "max.compaction.lag.ms",
    "file.delete.delay.ms",
    "max.message.bytes",
    "min.compaction.lag.ms",
    "message.timestamp.type",
    "preallocate",
    "index.interval.bytes",
    "min.cleanable.dirty.ratio",
    "unclean.leader.election.enable",
    "retention.bytes",
    "delete.retention.ms",
    "message.timestamp.after.max.ms",
    "message.timestamp.before.max.ms",
    "segment.ms",
    "segment.index.bytes",
)
# broker settings that have no value unless set (Kafka's default is null)
_UNSET_BY_DEFAULT = frozenset(
    {"log.retention.ms", "log.roll.ms", "log.roll.jitter.ms", "log.flush.interval.ms"}
)


THROTTLED_REPLICAS = (
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)
_REPLICA = re.compile(r"([0-9]+:[0-9]+)?")

_NOT_A = {
    "int": "Not a number of type INT",
    "long": "Not a number of type LONG",
    "double": "Not a number of type DOUBLE",
    "boolean": "Expected value to be either true or false",
}
_ONE_OF = {
    "cleanup.policy": ("compact", "delete"),
    "message.timestamp.type": ("CreateTime", "LogAppendTime"),
}


def validate(configs: Mapping[str, str | None]) -> None:
    """TopicError (INVALID_CONFIG) for a name Kafka does not know or a value it would
    refuse, in Kafka's words."""
    for name, value in configs.items():
        definition = DEFINITIONS.get(name)
        if definition is None:
            raise TopicError(INVALID_CONFIG, f"Unknown topic config name: {name}")
        if value is None:
            continue
        problem = _value_problem(name, definition.type_name, value)
        if problem is not None:
            bad, why = problem
            raise TopicError(INVALID_CONFIG, f"Invalid value {bad} for configuration {name}: {why}")


def _value_problem(name: str, type_name: str, value: str) -> tuple[str, str] | None:
    """(the value refused, why): of a list, the first item refused, as Kafka says."""
    try:
        if type_name in ("int", "long"):
            int(value)
        elif type_name == "double":
            float(value)
        elif type_name == "boolean" and value.strip().lower() not in ("true", "false"):
            raise ValueError(value)
    except ValueError:
        return value, _NOT_A[type_name]
    if name in THROTTLED_REPLICAS:
        items = [item.strip() for item in value.split(",")] if value.strip() else []
        if items != ["*"] and not all(_REPLICA.fullmatch(item) for item in items):
            return (
                f"[{', '.join(items)}]",
                f"{name} must be the literal '*' or a list of replicas in the following "
                "format: [partitionId]:[brokerId],[partitionId]:[brokerId],...",
            )
        return None
    allowed = _ONE_OF.get(name)
    if allowed is not None:
        for item in (v.strip() for v in value.split(",")):
            if item not in allowed:
                return item, f"String must be one of: {', '.join(allowed)}"
    return None


@dataclass(frozen=True)
class DescribedConfig:
    name: str
    value: str | None  # None: no value (Kafka's null)
    source: int
    read_only: bool = False
    is_sensitive: bool = False


def describe(configs: Mapping[str, str], broker: BrokerConfig) -> list[DescribedConfig]:
    described = []
    for name, definition in sorted(DEFINITIONS.items()):
        if name in configs:
            described.append(DescribedConfig(name, configs[name], DYNAMIC_TOPIC_CONFIG))
            continue
        value = definition.default(broker)
        changed = value != definition.default(_BROKER_DEFAULTS)
        described.append(
            DescribedConfig(name, value, STATIC_BROKER_CONFIG if changed else DEFAULT_CONFIG)
        )
    return described


def synonyms(described: DescribedConfig, broker: BrokerConfig) -> list[tuple[str, str | None, int]]:
    """(name, value, source) of what provides a topic config, as Kafka lists them: the
    topic's own value, then the broker setting's (static, then default), where it has
    one."""
    found: list[tuple[str, str | None, int]] = []
    if described.source == DYNAMIC_TOPIC_CONFIG:
        found.append((described.name, described.value, DYNAMIC_TOPIC_CONFIG))
    definition = DEFINITIONS[described.name]
    broker_name = definition.broker_name
    if broker_name is None:
        return found
    if broker_name in _UNSET_BY_DEFAULT:
        raw = broker.raw.get(broker_name)
        if raw is not None:
            found.append((broker_name, raw, STATIC_BROKER_CONFIG))
        return found
    value, default = definition.default(broker), definition.default(_BROKER_DEFAULTS)
    if value != default:
        found.append((broker_name, value, STATIC_BROKER_CONFIG))
    found.append((broker_name, default, DEFAULT_CONFIG))
    return found
