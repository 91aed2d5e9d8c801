"""A streams group's topology set against the topics that exist, as Kafka's
InternalTopicManager does it: how many partitions each repartition and changelog
topic must have, how many tasks each subtopology has, which internal topics are
missing (the broker creates them), and what keeps the group from being assigned
tasks (the status its members see).

- Source topics must exist (MISSING_SOURCE_TOPICS otherwise).
- A repartition topic has the partitions the topology gives it, else those of the
  largest source of the subtopology writing to it; copartitioned topics must agree
  (INCORRECTLY_PARTITIONED_TOPICS); a changelog topic has as many partitions as its
  subtopology's largest source.
- Internal topics that exist must have those counts; missing ones are to be created
  (MISSING_INTERNAL_TOPICS until they are).
- A topology whose partition counts cannot be worked out is invalid
  (STREAMS_INVALID_TOPOLOGY, raised as InvalidTopology).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from odradek.coordinator.group.streams_records import Subtopology, TopicInfo, Topology

# heartbeat statuses (StreamsGroupHeartbeatResponse.Status)
STALE_TOPOLOGY, MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED_TOPICS = 0, 1, 2
MISSING_INTERNAL_TOPICS, SHUTDOWN_APPLICATION, ASSIGNMENT_DELAYED = 3, 4, 5


class InvalidTopology(Exception):
    """STREAMS_INVALID_TOPOLOGY, with Kafka's message."""


class TopologyFailure(Exception):
    """What Kafka fails with an IllegalStateException (UNKNOWN_SERVER_ERROR)."""


class _Problem(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class InternalTopic:
    name: str
    partitions: int
    replication_factor: int  # 0: the broker's default
    configs: tuple[tuple[str, str], ...]  # in the order Kafka's map lists them


@dataclass(frozen=True)
class ConfiguredSubtopology:
    tasks: int
    source_topics: frozenset[str]
    repartition_sources: tuple[InternalTopic, ...]
    repartition_sinks: frozenset[str]
    changelogs: tuple[InternalTopic, ...]


@dataclass(frozen=True)
class ConfiguredTopology:
    epoch: int
    metadata_hash: int
    subtopologies: dict[str, ConfiguredSubtopology] | None
    to_create: tuple[InternalTopic, ...] = ()
    # (status, detail) while the group cannot be assigned tasks
    problem: tuple[int, str] | None = None

    @property
    def ready(self) -> bool:
        return self.problem is None


def metadata_hash(topology: Topology, topics: Mapping[str, tuple[object, int]]) -> int:
    """A hash of the topics the topology needs, as they exist (0 when none does)."""
    found = sorted(
        (n, str(topics[n][0]), topics[n][1]) for n in topology.required_topics() if n in topics
    )
    if not found:
        return 0
    digest = hashlib.blake2b(repr(found).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def configure(
    topology: Topology, partitions: Mapping[str, int], hash_value: int
) -> ConfiguredTopology:
    """`partitions`: the partition count of each topic that exists."""
    subs = sorted(topology.subtopologies, key=lambda s: s.subtopology_id)
    try:
        missing = sorted({t for s in subs for t in s.source_topics if t not in partitions})
        if missing:
            raise _Problem(
                MISSING_SOURCE_TOPICS, f"Source topics {summarize(missing)} are missing."
            )
        decided = _decide_partitions(subs, partitions)
        count = _Counter(partitions, decided)
        configured = {
            s.subtopology_id: ConfiguredSubtopology(
                max((count.of(t) for t in _sources(s)), default=0),
                frozenset(s.source_topics),
                tuple(_internal(t, decided) for t in s.repartition_source_topics),
                frozenset(s.repartition_sink_topics),
                tuple(_internal(t, decided) for t in s.state_changelog_topics),
            )
            for s in subs
        }
        to_create = _missing_internal(configured, topology, partitions)
    except _Problem as failed:
        return ConfiguredTopology(
            topology.epoch, hash_value, None, (), (failed.status, str(failed))
        )
    missing_internal = None
    if to_create:
        names = [t.name for t in to_create]
        missing_internal = (
            MISSING_INTERNAL_TOPICS,
            f"Internal topics are missing: {summarize(names)}",
        )
    return ConfiguredTopology(topology.epoch, hash_value, configured, to_create, missing_internal)


def summarize(names: Iterable[str]) -> str:
    names = list(names)
    if not names:
        return "<none>"
    shown = ", ".join(names[:3])
    return shown + (f" and {len(names) - 3} additional topics" if len(names) > 3 else "")


def _sources(sub: Subtopology) -> list[str]:
    return [*sub.source_topics, *(t.name for t in sub.repartition_source_topics)]


class _Counter:
    """A topic's partition count: as it exists, else as decided for an internal topic."""

    def __init__(self, existing: Mapping[str, int], decided: Mapping[str, int]) -> None:
        self.existing, self.decided = existing, decided

    def get(self, topic: str) -> int | None:
        found = self.existing.get(topic)
        return found if found is not None else self.decided.get(topic)

    def of(self, topic: str) -> int:
        found = self.get(topic)
        if found is None:
            raise TopologyFailure(f"Number of partitions must be set for topic {topic}")
        return found


def _decide_partitions(subs: list[Subtopology], existing: Mapping[str, int]) -> dict[str, int]:
    decided: dict[str, int] = {}
    count = _Counter(existing, decided)
    decided.update(_repartition_counts(subs, count))
    fixed = {t.name for s in subs for t in s.repartition_source_topics if t.partitions != 0}
    flexible = {t.name for s in subs for t in s.repartition_source_topics if t.partitions == 0}
    for sub in subs:
        for group in sub.copartition_groups:
            try:
                names = {sub.source_topics[i] for i in group.source_topics}
                names |= {
                    sub.repartition_source_topics[i].name for i in group.repartition_source_topics
                }
            except IndexError as exc:
                raise TopologyFailure(f"copartition group index out of range: {exc}") from exc
            decided.update(_copartition(names, fixed, flexible, count))
    changelogs = {}
    for sub in subs:
        sizes = [count.of(t) for t in _sources(sub)]
        if not sizes:
            raise InvalidTopology(f"No source topics found for subtopology {sub.subtopology_id}")
        for topic in sub.state_changelog_topics:
            changelogs[topic.name] = max(sizes)
    decided.update(changelogs)
    return decided


def _repartition_counts(subs: list[Subtopology], count: _Counter) -> dict[str, int]:
    counts = {
        t.name: t.partitions for s in subs for t in s.repartition_source_topics if t.partitions
    }
    needed = True
    while needed:
        needed = progress = False
        for sub in subs:
            for sink in sub.repartition_sink_topics:
                if sink in counts:
                    continue
                candidates = [
                    counts[t.name] for t in sub.repartition_source_topics if t.name in counts
                ]
                candidates += [
                    n for t in sub.source_topics if (n := count.existing.get(t)) is not None
                ]
                if not candidates:
                    needed = True
                else:
                    counts[sink] = max(candidates)
                    progress = True
        if needed and not progress:
            raise InvalidTopology(
                "Failed to compute number of partitions for all repartition topics. There may "
                "be loops in the topology that cannot be resolved."
            )
    for sub in subs:
        if any(t.name not in counts for t in sub.repartition_source_topics):
            raise InvalidTopology(
                "Failed to compute number of partitions for all repartition topics, because a "
                "repartition source topic is never used as a sink topic."
            )
    return counts


def _copartition(
    names: set[str], fixed: set[str], flexible: set[str], count: _Counter
) -> dict[str, int]:
    if not names:
        return {}
    repartition = {t: count.of(t) for t in names if t in fixed or t in flexible}
    others = {t: count.of(t) for t in names if t not in repartition}
    if set(repartition) == names:
        if fixed:
            sizes = {t: count.of(t) for t in fixed}
            if len(set(sizes.values())) > 1:
                raise _Problem(INCORRECTLY_PARTITIONED_TOPICS, _not_same(repartition))
            use = next(iter(sizes.values()))
        else:
            use = max(repartition.values(), default=0)
            if use == 0:
                raise InvalidTopology(
                    "All topics in the copartition group had undefined partition number: "
                    f"[{', '.join(repartition)}]"
                )
    else:
        if len(set(others.values())) > 1:
            raise _Problem(INCORRECTLY_PARTITIONED_TOPICS, _not_same(others))
        use = next(iter(others.values()))
    for topic, size in repartition.items():
        if topic in fixed and size != use:
            raise _Problem(
                INCORRECTLY_PARTITIONED_TOPICS,
                f"Number of partitions [{size}] of repartition topic [{topic}] doesn't match "
                f"number of partitions [{use}] of the source topic.",
            )
    return dict.fromkeys(repartition, use)


def _not_same(sizes: Mapping[str, int]) -> str:
    listed = ", ".join(f"{k}={v}" for k, v in sorted(sizes.items()))
    return f"Following topics do not have the same number of partitions: [{{{listed}}}]"


def _internal(topic: TopicInfo, decided: Mapping[str, int]) -> InternalTopic:
    partitions = topic.partitions or decided.get(topic.name)
    if not partitions:
        raise TopologyFailure(f"Number of partitions must be set for topic {topic.name}")
    configs = dict(topic.configs)
    return InternalTopic(
        topic.name,
        partitions,
        topic.replication_factor,
        tuple((k, configs[k]) for k in java_hash_order(list(configs))),
    )


def _missing_internal(
    configured: Mapping[str, ConfiguredSubtopology], topology: Topology, existing: Mapping[str, int]
) -> tuple[InternalTopic, ...]:
    wanted: dict[str, InternalTopic] = {}
    for sub in configured.values():
        for topic in (*sub.repartition_sources, *sub.changelogs):
            wanted[topic.name] = topic
    order = java_hash_order(list(wanted))
    for name in sorted(topology.required_topics()):
        found = existing.get(name)
        expected = wanted.pop(name, None)
        if found is not None and expected is not None and found != expected.partitions:
            raise _Problem(
                INCORRECTLY_PARTITIONED_TOPICS,
                f"Existing topic {name} has different number of partitions: expected "
                f"{expected.partitions}, found {found}",
            )
        if found is None and expected is not None:
            wanted[name] = expected
    return tuple(wanted[n] for n in order if n in wanted)


def java_hash_order(keys: list[str]) -> list[str]:
    """The order a java.util.HashMap, filled with `keys` in this order, lists them in:
    Kafka writes several lists from such maps, and its messages show them so."""
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: str) -> int:
        h = 0
        raw = key.encode("utf-16-be")
        for i in range(0, len(raw), 2):
            h = (31 * h + int.from_bytes(raw[i : i + 2], "big")) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(keys, key=bucket)  # stable: a bucket keeps the order of insertion
