"""The source: ``spark.read.format("odradek")`` and ``spark.readStream.format("odradek")``.

The driver turns the options into offset ranges, one Spark input partition per Kafka
partition range (more with ``minPartitions``); each executor task reads its range with
``reader.read_range``. A streaming query's offsets live in its checkpoint, in the same
JSON shape as Spark's Kafka source, so nothing is committed to Kafka.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from odradek.spark.metadata import ClusterView, KafkaSourceError
from odradek.spark.options import SourceOptions
from odradek.spark.options import TopicPartition as TP
from odradek.spark.ranges import (
    OffsetRange,
    from_checkpoint,
    limit_offsets,
    split_ranges,
    to_checkpoint,
)
from odradek.spark.reader import read_range
from odradek.spark.schema import arrow_schema, source_schema


def check_schema(options: SourceOptions, schema: StructType) -> None:
    expected = source_schema(options.include_headers)
    if schema != expected:
        raise KafkaSourceError(
            "The Kafka source has a fixed schema and cannot take a user-specified one: "
            f"expected {expected.simpleString()}, got {schema.simpleString()}"
        )


class _RangeReading:
    """What the batch and streaming readers share: the options, the Arrow schema, a
    cluster view made on first use on the driver (never shipped to executors), and
    reading one range."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        check_schema(options, schema)
        self.options = options
        self.arrow: pa.Schema = arrow_schema(schema)
        self._view: ClusterView | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_view"] = None
        return state

    @property
    def view(self) -> ClusterView:
        if self._view is None:
            self._view = ClusterView(
                self.options.client_config,
                timeout_ms=self.options.timeout_ms,
                read_committed=self.options.read_committed,
            )
        return self._view

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, OffsetRange):
            return iter(())  # Spark plans one empty partition when there is nothing to read
        return read_range(
            partition,
            self.options.client_config,
            self.arrow,
            include_headers=self.options.include_headers,
            fail_on_data_loss=self.options.fail_on_data_loss,
            timeout_ms=self.options.timeout_ms,
        )


class BatchReader(_RangeReading, DataSourceReader):
    def partitions(self) -> Sequence[InputPartition]:
        opts = self.options
        tps = self.view.partitions(opts.subscription)
        start = self.view.resolve(
            opts.starting, tps, starting=True, latest_if_missing=opts.timestamp_strategy_latest
        )
        end = self.view.resolve(opts.ending, tps, starting=False, latest_if_missing=True)
        backwards = [tp for tp in tps if start[tp] > end[tp]]
        if backwards:
            raise KafkaSourceError(
                "Starting offsets are after ending offsets for "
                + ", ".join(f"{t}-{p} ({start[(t, p)]} > {end[(t, p)]})" for t, p in backwards)
            )
        ranges = [OffsetRange(t, p, start[(t, p)], end[(t, p)]) for t, p in tps]
        return split_ranges(ranges, opts.min_partitions)


class StreamReader(_RangeReading, DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        super().__init__(options, schema)
        # Trigger.AvailableNow: the end offsets at the query's start, never read past.
        self._target: dict[TP, int] | None = None

    def initialOffset(self) -> dict:
        opts = self.options
        tps = self.view.partitions(opts.subscription)
        start = self.view.resolve(
            opts.starting, tps, starting=True, latest_if_missing=opts.timestamp_strategy_latest
        )
        return to_checkpoint(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        return ReadAllAvailable()

    def _latest_now(self) -> dict[TP, int]:
        # a topic deleted while the query runs shows up in partitions() as data loss
        tps = self.view.partitions(self.options.subscription, require_existing=False)
        return self.view.latest(tps)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._latest_now()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = from_checkpoint(start)
        latest = dict(self._target) if self._target is not None else self._latest_now()
        # a partition added while the query runs is read from its beginning
        base = {tp: begin.get(tp, 0) for tp in latest}
        if isinstance(limit, ReadMaxRows):
            latest = limit_offsets(base, latest, limit.max_rows)
        shrunk = sorted(tp for tp, end in latest.items() if end < base[tp])
        if shrunk and self.options.fail_on_data_loss:
            raise KafkaSourceError(
                "Partitions now end before offsets already read (was the topic deleted and "
                "created again?): "
                + ", ".join(f"{t}-{p} ({latest[(t, p)]} < {base[(t, p)]})" for t, p in shrunk)
                + ". Some data may have been lost; set failOnDataLoss=false to go on."
            )
        # with failOnDataLoss=false a shrunk partition goes on from its new end
        return to_checkpoint(latest)

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin = from_checkpoint(start)
        until = from_checkpoint(end)
        gone = sorted(set(begin) - set(until))
        if gone and self.options.fail_on_data_loss:
            raise KafkaSourceError(
                "Partitions were removed while the query ran: "
                + ", ".join(f"{t}-{p}" for t, p in gone)
                + ". Some data may have been lost; set failOnDataLoss=false to go on."
            )
        ranges = [
            OffsetRange(t, p, begin.get((t, p), 0), offset) for (t, p), offset in until.items()
        ]
        return split_ranges(ranges, self.options.min_partitions)

    def commit(self, end: dict) -> None:
        """Nothing to do: the checkpoint holds the offsets, no group commits them."""

    def stop(self) -> None:
        if self._view is not None:
            self._view.close()
            self._view = None
