"""Options of the Odradek Spark source and sink, read the way Spark's Kafka connector
reads them, so a job moves between ``format("kafka")`` and ``format("odradek")`` by its
format name alone.

Everything here is pure: option maps in, plain values out, errors as ``OptionError``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

# (topic, partition): the key of every per-partition map in the connector.
TopicPartition = tuple[str, int]

EARLIEST = -2
LATEST = -1

DEFAULT_TIMEOUT_MS = 60_000
DEFAULT_TRANSACTIONAL_ID_PREFIX = "odradek-spark"

# Client settings the connector owns; Spark's Kafka source refuses the same ones.
_REFUSED_CLIENT_SETTINGS = {
    "auto.offset.reset": "set the source option 'startingOffsets' instead",
    "enable.auto.commit": "the query's checkpoint holds the offsets",
    "key.deserializer": "keys are always read as binary",
    "value.deserializer": "values are always read as binary",
    "key.serializer": "keys are written as given (string or binary)",
    "value.serializer": "values are written as given (string or binary)",
    "transactional.id": "the sink derives it from the query (option 'transactionalIdPrefix')",
    "enable.partition.eof": "the reader needs it to know where a partition ends",
}


class OptionError(ValueError):
    """A connector option is missing, malformed or not allowed here."""


@dataclass(frozen=True)
class OffsetBound:
    """Where a read starts or ends.

    ``kind`` is ``earliest``, ``latest``, ``offsets`` (``per_partition`` holds offsets,
    -2 and -1 standing for earliest and latest), ``timestamp`` (``timestamp`` for every
    partition) or ``timestamps`` (``per_partition`` holds timestamps in ms).
    """

    kind: str
    per_partition: Mapping[TopicPartition, int] = field(default_factory=dict)
    timestamp: int | None = None


@dataclass(frozen=True)
class Subscription:
    """Which partitions a query reads: a topic list, a topic pattern or fixed partitions."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None
    partitions: tuple[TopicPartition, ...] = ()

    def describe(self) -> str:
        if self.pattern is not None:
            return f"subscribePattern={self.pattern!r}"
        if self.partitions:
            return f"assign={sorted(self.partitions)}"
        return f"subscribe={list(self.topics)}"


@dataclass(frozen=True)
class SourceOptions:
    bootstrap_servers: str
    subscription: Subscription
    starting: OffsetBound
    ending: OffsetBound
    client_config: Mapping[str, str]
    read_committed: bool
    include_headers: bool
    fail_on_data_loss: bool
    min_partitions: int | None
    max_offsets_per_trigger: int | None
    timeout_ms: int
    timestamp_strategy_latest: bool


@dataclass(frozen=True)
class SinkOptions:
    bootstrap_servers: str
    topic: str | None
    client_config: Mapping[str, str]
    transactional_id_prefix: str
    timeout_ms: int


def client_config(options: Mapping[str, str]) -> dict[str, str]:
    """The ``kafka.*`` options with their prefix removed, checked for settings the
    connector owns."""
    config: dict[str, str] = {}
    for key, value in options.items():
        if not key.lower().startswith("kafka."):
            continue
        name = key[len("kafka.") :].lower()
        if name in _REFUSED_CLIENT_SETTINGS:
            raise OptionError(
                f"Kafka option '{name}' is not supported: {_REFUSED_CLIENT_SETTINGS[name]}"
            )
        config[name] = str(value)
    if not config.get("bootstrap.servers"):
        raise OptionError(
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer"
        )
    return config


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items()}


def _positive_int(options: Mapping[str, str], name: str) -> int | None:
    raw = options.get(name.lower())
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise OptionError(f"Option '{name}' must be a positive integer, got {raw!r}") from None
    if value <= 0:
        raise OptionError(f"Option '{name}' must be a positive integer, got {raw!r}")
    return value


def boolean_option(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = options.get(name.lower())
    if raw is None:
        return default
    if raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    raise OptionError(f"Option '{name}' must be 'true' or 'false', got {raw!r}")


def _json_object(name: str, raw: str) -> dict[str, object]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise OptionError(f"Option '{name}' is not valid JSON ({exc.msg}): {raw!r}") from None
    if not isinstance(value, dict):
        raise OptionError(f"Option '{name}' must be a JSON object, got {raw!r}")
    return value


def parse_partition_map(name: str, raw: str) -> dict[TopicPartition, int]:
    """``{"topicA": {"0": 23, "1": -1}}`` -> ``{("topicA", 0): 23, ("topicA", 1): -1}``."""
    result: dict[TopicPartition, int] = {}
    for topic, partitions in _json_object(name, raw).items():
        if not isinstance(partitions, dict):
            raise OptionError(f"Option '{name}': topic {topic!r} must map partitions to numbers")
        for partition, value in partitions.items():
            try:
                number = int(partition)
            except ValueError:
                raise OptionError(f"Option '{name}': {partition!r} is not a partition") from None
            if isinstance(value, bool) or not isinstance(value, int):
                raise OptionError(f"Option '{name}': {topic}/{partition} must be an integer")
            result[(topic, number)] = value
    return result


def parse_subscription(options: Mapping[str, str]) -> Subscription:
    given = [name for name in ("subscribe", "subscribepattern", "assign") if name in options]
    if len(given) != 1:
        raise OptionError(
            "Exactly one of the options 'subscribe', 'subscribePattern' or 'assign' must be "
            f"given for the Kafka source (got {len(given)})"
        )
    kind = given[0]
    raw = options[kind]
    if kind == "subscribe":
        topics = tuple(t.strip() for t in raw.split(",") if t.strip())
        if not topics:
            raise OptionError(f"No topics to subscribe to in option 'subscribe': {raw!r}")
        return Subscription(topics=topics)
    if kind == "subscribepattern":
        if not raw.strip():
            raise OptionError("Pattern to subscribe is empty in option 'subscribePattern'")
        try:
            re.compile(raw)
        except re.error as exc:
            raise OptionError(f"Option 'subscribePattern' is not a valid pattern: {exc}") from None
        return Subscription(pattern=raw)
    assigned: list[TopicPartition] = []
    for topic, partitions in _json_object("assign", raw).items():
        if not isinstance(partitions, list) or not all(
            isinstance(p, int) and not isinstance(p, bool) for p in partitions
        ):
            raise OptionError(f"Option 'assign' must look like {{\"topicA\":[0,1]}}; got {raw!r}")
        assigned.extend((topic, p) for p in partitions)
    if not assigned:
        raise OptionError(f"No partitions to assign in option 'assign': {raw!r}")
    return Subscription(partitions=tuple(assigned))


def _offset_bound(options: Mapping[str, str], which: str, default: str) -> OffsetBound:
    """``which`` is ``starting`` or ``ending``; timestamps win over offsets, as in Spark."""
    timestamp = options.get(f"{which}timestamp")
    if timestamp is not None:
        try:
            return OffsetBound("timestamp", timestamp=int(timestamp))
        except ValueError:
            raise OptionError(
                f"Option '{which}Timestamp' must be milliseconds since the epoch, got {timestamp!r}"
            ) from None
    by_timestamp = options.get(f"{which}offsetsbytimestamp")
    if by_timestamp is not None:
        name = f"{which}OffsetsByTimestamp"
        return OffsetBound("timestamps", per_partition=parse_partition_map(name, by_timestamp))
    raw = options.get(f"{which}offsets", default).strip()
    if raw.lower() in ("earliest", "latest"):
        return OffsetBound(raw.lower())
    return OffsetBound("offsets", per_partition=parse_partition_map(f"{which}Offsets", raw))


def parse_source_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    opts = _lower(options)
    config = client_config(opts)
    subscription = parse_subscription(opts)
    starting = _offset_bound(opts, "starting", "latest" if streaming else "earliest")
    ending = _offset_bound(opts, "ending", "latest")
    if streaming:
        if any(k in opts for k in ("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp")):
            raise OptionError("Ending offsets are not valid in streaming queries ('endingOffsets')")
    else:
        if "maxoffsetspertrigger" in opts:
            raise OptionError("Option 'maxOffsetsPerTrigger' is only valid in streaming queries")
        if starting.kind == "latest" or LATEST in starting.per_partition.values():
            raise OptionError("Starting offset 'latest' is not valid in batch queries")
        if ending.kind == "earliest" or EARLIEST in ending.per_partition.values():
            raise OptionError("Ending offset 'earliest' is not valid in batch queries")
    isolation = config.get("isolation.level", "read_uncommitted")
    if isolation not in ("read_committed", "read_uncommitted"):
        raise OptionError(
            f"Option 'kafka.isolation.level' must be read_committed or read_uncommitted, "
            f"got {isolation!r}"
        )
    config["isolation.level"] = isolation
    strategy = opts.get("startingoffsetsbytimestampstrategy", "error").lower()
    if strategy not in ("error", "latest"):
        raise OptionError(
            f"Option 'startingOffsetsByTimestampStrategy' must be 'error' or 'latest', "
            f"got {strategy!r}"
        )
    return SourceOptions(
        bootstrap_servers=config["bootstrap.servers"],
        subscription=subscription,
        starting=starting,
        ending=ending,
        client_config=config,
        read_committed=isolation == "read_committed",
        include_headers=boolean_option(opts, "includeHeaders", False),
        fail_on_data_loss=boolean_option(opts, "failOnDataLoss", True),
        min_partitions=_positive_int(opts, "minPartitions"),
        max_offsets_per_trigger=_positive_int(opts, "maxOffsetsPerTrigger"),
        timeout_ms=_positive_int(opts, "kafkaConsumer.pollTimeoutMs") or DEFAULT_TIMEOUT_MS,
        timestamp_strategy_latest=strategy == "latest",
    )


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    opts = _lower(options)
    config = client_config(opts)
    topic = opts.get("topic")
    if topic is not None and not topic.strip():
        raise OptionError("Option 'topic' is empty")
    prefix = opts.get("transactionalidprefix", DEFAULT_TRANSACTIONAL_ID_PREFIX)
    if not prefix.strip():
        raise OptionError("Option 'transactionalIdPrefix' is empty")
    return SinkOptions(
        bootstrap_servers=config["bootstrap.servers"],
        topic=topic.strip() if topic is not None else None,
        client_config=config,
        transactional_id_prefix=prefix,
        timeout_ms=_positive_int(opts, "kafkaProducer.timeoutMs") or DEFAULT_TIMEOUT_MS,
    )
