"""Offset ranges: how a query's work is cut into Spark input partitions.

Pure functions over ``{(topic, partition): offset}`` maps. Spark keeps a streaming
query's offsets in its checkpoint as JSON, ``{"topic": {"0": 42}}``, the same shape as
Spark's Kafka source; ``to_checkpoint`` and ``from_checkpoint`` convert.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

from odradek.spark.options import TopicPartition

Offsets = Mapping[TopicPartition, int]


@dataclass(frozen=True)
class OffsetRange(InputPartition):
    """Records ``start`` (inclusive) to ``end`` (exclusive) of one partition: one Spark task."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def to_checkpoint(offsets: Offsets) -> dict[str, dict[str, int]]:
    result: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        result.setdefault(topic, {})[str(partition)] = offset
    return result


def from_checkpoint(value: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    return {
        (topic, int(partition)): int(offset)
        for topic, partitions in value.items()
        for partition, offset in partitions.items()
    }


def split_ranges(ranges: Iterable[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """Drop empty ranges; when ``min_partitions`` asks for more tasks than there are ranges,
    cut each range into pieces in proportion to its share of all the records."""
    non_empty = [r for r in ranges if r.size > 0]
    if min_partitions is None or len(non_empty) >= min_partitions:
        return non_empty
    total = sum(r.size for r in non_empty)
    pieces: list[OffsetRange] = []
    for r in non_empty:
        count = min(r.size, max(1, round(r.size / total * min_partitions)))
        start = r.start
        for index in range(count):
            # integer shares; the last piece takes what rounding left over
            end = r.end if index == count - 1 else start + r.size // count
            pieces.append(OffsetRange(r.topic, r.partition, start, end))
            start = end
    return pieces


def limit_offsets(start: Offsets, latest: Offsets, max_records: int) -> dict[TopicPartition, int]:
    """The end offsets of a micro-batch reading at most about ``max_records`` records,
    shared between partitions in proportion to how far each is behind. A partition
    with anything to read advances by at least one record, so none starves."""
    lag = {tp: max(0, end - start.get(tp, end)) for tp, end in latest.items()}
    total = sum(lag.values())
    if total <= max_records:
        return dict(latest)
    limited: dict[TopicPartition, int] = {}
    for tp, end in latest.items():
        if tp not in start or lag[tp] == 0:
            limited[tp] = end
            continue
        share = max_records * lag[tp] / total
        step = math.ceil(share) if share < 1 else math.floor(share)
        limited[tp] = min(end, start[tp] + step)
    return limited
