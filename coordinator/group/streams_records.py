"""The values of `__consumer_offsets` records of streams groups (KIP-1071), in Kafka's
own schemas (their record types: streams.py; keys and common pieces: record_codecs.py):

    17  StreamsGroupMetadata                 group epoch, metadata hash; tagged: the
                                             validated topology epoch, the assignment
                                             configs last used
    19  StreamsGroupMemberMetadata           a member's client, process, endpoint, tags
    20  StreamsGroupTargetAssignmentMetadata the target assignment's epoch (and time)
    21  StreamsGroupTargetAssignmentMember   a member's target tasks
    22  StreamsGroupCurrentMemberAssignment  a member's epoch, state, tasks and the
                                             tasks it still has to give up; active
                                             tasks carry the epoch they were assigned at
    23  StreamsGroupTopology                 the topology the group was initialized with

Type 18 (the subscribed topics' metadata of Kafka 4.0) is no longer written by Kafka;
it is read and ignored. A null value is a tombstone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple, TypeVar

from odradek.coordinator.group import record_codecs as rc
from odradek.coordinator.registry import Codec
from odradek.protocol.codec import Reader, Writer

# subtopology id -> partitions (task ids)
Tasks = Mapping[str, frozenset[int]]
# subtopology id -> partition -> the member epoch it was assigned at (active tasks)
ActiveTasks = Mapping[str, Mapping[int, int]]

T = TypeVar("T")


@dataclass(frozen=True)
class GroupMetadata:
    epoch: int
    metadata_hash: int
    validated_topology_epoch: int = -1
    assignment_configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class MemberMetadata:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    topology_epoch: int
    process_id: str
    user_endpoint: tuple[str, int] | None
    client_tags: tuple[tuple[str, str], ...]


class TargetEpoch(NamedTuple):
    epoch: int
    timestamp: int = 0  # when it was computed; 0: not written


@dataclass(frozen=True)
class TargetTasks:
    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)


@dataclass(frozen=True)
class AssignedTasks:
    """What a member owns: active tasks with their assignment epochs, standbys and
    warm-ups."""

    active: ActiveTasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)

    def active_ids(self) -> Tasks:
        return {s: frozenset(parts) for s, parts in self.active.items()}


# a member's current assignment: the tasks it holds and (pending_revocation) must give up
CurrentAssignment = rc.CurrentAssignment


@dataclass(frozen=True)
class TopicInfo:
    name: str
    partitions: int = 0
    replication_factor: int = 0
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class CopartitionGroup:
    """Indexes into the subtopology's source topics, regexes and repartition sources."""

    source_topics: tuple[int, ...] = ()
    source_topic_regex: tuple[int, ...] = ()
    repartition_source_topics: tuple[int, ...] = ()


@dataclass(frozen=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    source_topic_regex: tuple[str, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    copartition_groups: tuple[CopartitionGroup, ...] = ()


@dataclass(frozen=True)
class Topology:
    epoch: int
    subtopologies: tuple[Subtopology, ...] = ()

    def by_id(self) -> dict[str, Subtopology]:
        return {s.subtopology_id: s for s in self.subtopologies}

    def same_as(self, other: Topology) -> bool:
        """Kafka's equality: the epoch and each subtopology (keyed by its id)."""
        return self.epoch == other.epoch and self.by_id() == other.by_id()

    def required_topics(self) -> set[str]:
        """Source, repartition source and changelog topics."""
        names: set[str] = set()
        for sub in self.subtopologies:
            names.update(sub.source_topics)
            names.update(t.name for t in sub.repartition_source_topics)
            names.update(t.name for t in sub.state_changelog_topics)
        return names

    def source_topic_map(self) -> dict[str, str]:
        """Source and repartition source topic -> the subtopology that reads it."""
        found: dict[str, str] = {}
        for sub in self.subtopologies:
            for name in (*sub.source_topics, *(t.name for t in sub.repartition_source_topics)):
                found[name] = sub.subtopology_id
        return found


# -- helpers -------------------------------------------------------------------------


def _tags(writer: Writer, fields: list[tuple[int, bytes]]) -> bytes:
    writer.uvarint(len(fields))
    for tag, body in fields:
        writer.uvarint(tag).uvarint(len(body))
        writer.out += body
    return writer.done()


def _read_tags(reader: Reader) -> dict[int, Reader]:
    found = {}
    for _ in range(reader.uvarint()):
        tag, size = reader.uvarint(), reader.uvarint()
        found[tag] = Reader(reader.bytes_exactly(size))
    return found


def _pairs(writer: Writer, pairs: tuple[tuple[str, str], ...]) -> None:
    writer.compact_length(len(pairs))
    for key, value in pairs:
        writer.compact_string(key).compact_string(value).no_tags()


def _read_pairs(reader: Reader) -> tuple[tuple[str, str], ...]:
    pairs = []
    for _ in range(reader.compact_length()):
        key, value = reader.compact_string() or "", reader.compact_string() or ""
        reader.skip_tags()
        pairs.append((key, value))
    return tuple(pairs)


def _array(reader: Reader, item: Callable[[Reader], T]) -> tuple[T, ...]:
    return tuple(item(reader) for _ in range(reader.compact_length()))


# -- 17: the group's metadata --------------------------------------------------------


def _encode_group_metadata(value: GroupMetadata) -> bytes:
    writer = rc.start_value().int32(value.epoch).int64(value.metadata_hash)
    tagged = []
    if value.validated_topology_epoch != -1:
        tagged.append((0, Writer().int32(value.validated_topology_epoch).done()))
    configs = Writer()
    _pairs(configs, value.assignment_configs)
    tagged.append((1, configs.done()))
    return _tags(writer, tagged)


def _decode_group_metadata(raw: bytes) -> GroupMetadata:
    reader = rc.read_value(raw)
    epoch, metadata_hash = reader.int32(), reader.int64()
    tags = _read_tags(reader)
    validated = tags[0].int32() if 0 in tags else -1
    configs = _read_pairs(tags[1]) if 1 in tags else ()
    return GroupMetadata(epoch, metadata_hash, validated, configs)


# -- 19: a member's metadata ---------------------------------------------------------


def _encode_member(value: MemberMetadata) -> bytes:
    writer = rc.start_with_strings(
        value.instance_id, value.rack_id, value.client_id, value.client_host
    )
    writer.int32(value.rebalance_timeout_ms).int32(value.topology_epoch)
    writer.compact_string(value.process_id)
    if value.user_endpoint is None:
        writer.int8(-1)
    else:
        host, port = value.user_endpoint
        writer.int8(1).compact_string(host).int16(port - 0x10000 if port > 0x7FFF else port)
        writer.no_tags()
    _pairs(writer, value.client_tags)
    return writer.no_tags().done()


def _decode_member(raw: bytes) -> MemberMetadata:
    reader = rc.read_value(raw)
    instance_id, rack_id = reader.compact_string(), reader.compact_string()
    client_id, client_host = reader.compact_string() or "", reader.compact_string() or ""
    rebalance_timeout_ms, topology_epoch = reader.int32(), reader.int32()
    process_id = reader.compact_string() or ""
    endpoint = None
    if reader.int8() >= 0:
        host, port = reader.compact_string() or "", reader.int16() & 0xFFFF
        reader.skip_tags()
        endpoint = (host, port)
    tags = _read_pairs(reader)
    return MemberMetadata(
        instance_id,
        rack_id,
        client_id,
        client_host,
        rebalance_timeout_ms,
        topology_epoch,
        process_id,
        endpoint,
        tags,
    )


# -- 20 and 21: the target assignment ------------------------------------------------


def _encode_target_epoch(value: TargetEpoch) -> bytes:
    writer = rc.start_value().int32(value.epoch)
    timestamp = value.timestamp
    return _tags(writer, [(0, Writer().int64(timestamp).done())] if timestamp else [])


def _decode_target_epoch(raw: bytes) -> TargetEpoch:
    reader = rc.read_value(raw)
    epoch = reader.int32()
    tags = _read_tags(reader)
    return TargetEpoch(epoch, tags[0].int64() if 0 in tags else 0)


def _write_tasks(writer: Writer, tasks: Tasks) -> None:
    writer.compact_length(len(tasks))
    for subtopology, parts in sorted(tasks.items()):
        rc.write_int32s(writer.compact_string(subtopology), parts).no_tags()


def _write_active(writer: Writer, tasks: ActiveTasks) -> None:
    """Active tasks, with the epoch each was assigned at (tagged field 0)."""
    writer.compact_length(len(tasks))
    for subtopology, epochs in sorted(tasks.items()):
        rc.write_int32s(writer.compact_string(subtopology), epochs)
        tagged = Writer().compact_length(len(epochs))
        for partition in sorted(epochs):
            tagged.int32(epochs[partition])
        _tags(writer, [(0, tagged.done())])


def _read_task_ids(reader: Reader) -> tuple[str, list[int], list[int] | None]:
    subtopology = reader.compact_string() or ""
    parts = [reader.int32() for _ in range(reader.compact_length())]
    tags = _read_tags(reader)
    epochs = None
    if 0 in tags:
        count = tags[0].uvarint() - 1
        epochs = None if count < 0 else [tags[0].int32() for _ in range(count)]
    return subtopology, parts, epochs


def _read_tasks(reader: Reader) -> dict[str, frozenset[int]]:
    tasks = {}
    for _ in range(reader.compact_length()):
        subtopology, parts, _epochs = _read_task_ids(reader)
        tasks[subtopology] = frozenset(parts)
    return tasks


def _read_active(reader: Reader, member_epoch: int) -> dict[str, dict[int, int]]:
    """Partitions without their epochs (records of older brokers) get the member's."""
    tasks = {}
    for _ in range(reader.compact_length()):
        subtopology, parts, epochs = _read_task_ids(reader)
        if epochs is None or len(epochs) != len(parts):
            epochs = [member_epoch] * len(parts)
        tasks[subtopology] = dict(zip(parts, epochs, strict=True))
    return tasks


def _encode_target(value: TargetTasks) -> bytes:
    writer = rc.start_value()
    for tasks in (value.active, value.standby, value.warmup):
        _write_tasks(writer, tasks)
    return writer.no_tags().done()


def _decode_target(raw: bytes) -> TargetTasks:
    reader = rc.read_value(raw)
    return TargetTasks(_read_tasks(reader), _read_tasks(reader), _read_tasks(reader))


# -- 22: a member's current assignment -------------------------------------------------


def _encode_current(value: CurrentAssignment[AssignedTasks]) -> bytes:
    writer = rc.start_current(value.member_epoch, value.previous_member_epoch, value.state)
    for tasks in (value.assigned, value.pending_revocation or AssignedTasks()):
        _write_active(writer, tasks.active)
        _write_tasks(writer, tasks.standby)
        _write_tasks(writer, tasks.warmup)
    return writer.no_tags().done()


def _decode_current(raw: bytes) -> CurrentAssignment[AssignedTasks]:
    reader, member_epoch, previous, state = rc.read_current(raw)
    assigned = AssignedTasks(
        _read_active(reader, member_epoch), _read_tasks(reader), _read_tasks(reader)
    )
    pending = AssignedTasks(
        _read_active(reader, member_epoch), _read_tasks(reader), _read_tasks(reader)
    )
    return CurrentAssignment(member_epoch, previous, state, assigned, pending)


# -- 23: the topology ------------------------------------------------------------------


def _write_topic_infos(writer: Writer, topics: tuple[TopicInfo, ...]) -> None:
    writer.compact_length(len(topics))
    for topic in topics:
        writer.compact_string(topic.name).int32(topic.partitions).int16(topic.replication_factor)
        _pairs(writer, topic.configs)
        writer.no_tags()


def _read_topic_info(reader: Reader) -> TopicInfo:
    name, partitions, factor = reader.compact_string() or "", reader.int32(), reader.int16()
    configs = _read_pairs(reader)
    reader.skip_tags()
    return TopicInfo(name, partitions, factor, configs)


def _int16s(writer: Writer, values: tuple[int, ...]) -> None:
    writer.compact_length(len(values))
    for value in values:
        writer.int16(value)


def _read_copartition_group(reader: Reader) -> CopartitionGroup:
    groups = [tuple(reader.int16() for _ in range(reader.compact_length())) for _ in range(3)]
    reader.skip_tags()
    return CopartitionGroup(*groups)


def _read_subtopology(reader: Reader) -> Subtopology:
    subtopology_id = reader.compact_string() or ""
    sources, regexes = rc.read_strings(reader), rc.read_strings(reader)
    changelogs = _array(reader, _read_topic_info)
    sinks = rc.read_strings(reader)
    repartition_sources = _array(reader, _read_topic_info)
    copartition = _array(reader, _read_copartition_group)
    reader.skip_tags()
    return Subtopology(
        subtopology_id, sources, regexes, changelogs, sinks, repartition_sources, copartition
    )


def _encode_topology(value: Topology) -> bytes:
    writer = rc.start_value().int32(value.epoch).compact_length(len(value.subtopologies))
    for sub in value.subtopologies:
        writer.compact_string(sub.subtopology_id)
        rc.write_strings(writer, sub.source_topics)
        rc.write_strings(writer, sub.source_topic_regex)
        _write_topic_infos(writer, sub.state_changelog_topics)
        rc.write_strings(writer, sub.repartition_sink_topics)
        _write_topic_infos(writer, sub.repartition_source_topics)
        writer.compact_length(len(sub.copartition_groups))
        for group in sub.copartition_groups:
            _int16s(writer, group.source_topics)
            _int16s(writer, group.source_topic_regex)
            _int16s(writer, group.repartition_source_topics)
            writer.no_tags()
        writer.no_tags()
    return writer.no_tags().done()


def _decode_topology(raw: bytes) -> Topology:
    reader = rc.read_value(raw)
    epoch = reader.int32()
    return Topology(epoch, _array(reader, _read_subtopology))


METADATA_VALUE = Codec(_encode_group_metadata, _decode_group_metadata)
MEMBER_VALUE = Codec(_encode_member, _decode_member)
TARGET_EPOCH_VALUE = Codec(_encode_target_epoch, _decode_target_epoch)
TARGET_VALUE = Codec(_encode_target, _decode_target)
CURRENT_VALUE = Codec(_encode_current, _decode_current)
TOPOLOGY_VALUE = Codec(_encode_topology, _decode_topology)
