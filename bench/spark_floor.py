"""The Spark benchmark's floor: ``format("odradek-bench-floor")``, a Python data source
without Kafka, and the read and write jobs that use it (see bench/spark.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

FLOOR_FORMAT = "odradek-bench-floor"


def floor_data_source() -> type:
    """``format("odradek-bench-floor")``: a Python data source without Kafka, for what
    Spark itself costs a Python source or sink of this shape. Its reader yields, per input
    partition, ``records / partitions`` rows of the ``odradek`` schema (values of ``size``
    bytes) in batches of 10,000, as the ``odradek`` reader does, from one batch made up
    front; its writer takes the batches and drops them. Defined in a function so that
    Spark ships the classes to its workers by value."""
    import pyarrow as pa
    from pyspark.sql.datasource import (
        DataSource,
        DataSourceArrowWriter,
        DataSourceReader,
        InputPartition,
        WriterCommitMessage,
    )
    from pyspark.sql.types import StructType

    from odradek.spark.schema import arrow_schema, source_schema

    class FloorReader(DataSourceReader):
        def __init__(self, records: int, size: int, partitions: int) -> None:
            self.records = records
            self.size = size
            self.parts = partitions

        def partitions(self) -> list[InputPartition]:
            return [InputPartition(i) for i in range(self.parts)]

        def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
            schema = arrow_schema(source_schema(False))
            rows = self.records // self.parts
            chunk = min(rows, 10_000)
            if not chunk:
                return
            values = [os.urandom(self.size) for _ in range(16)]
            batch = pa.RecordBatch.from_arrays(
                [
                    pa.nulls(chunk, pa.binary()),
                    pa.array([values[i & 15] for i in range(chunk)], pa.binary()),
                    pa.repeat("floor", chunk).cast(pa.string()),
                    pa.array([partition.value] * chunk, pa.int32()),
                    pa.array(range(chunk), pa.int64()),
                    pa.array([0] * chunk, schema.field("timestamp").type),
                    pa.array([0] * chunk, pa.int32()),
                ],
                schema=schema,
            )
            full, rest = divmod(rows, chunk)
            for _ in range(full):
                yield batch
            if rest:
                yield batch.slice(0, rest)

    class FloorWriter(DataSourceArrowWriter):
        def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
            for _batch in iterator:
                pass
            return WriterCommitMessage()

    class FloorSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return FLOOR_FORMAT

        def schema(self) -> StructType:
            return source_schema(False)

        def reader(self, schema: StructType) -> DataSourceReader:
            options = self.options
            return FloorReader(
                int(options["records"]), int(options["size"]), int(options["partitions"])
            )

        def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
            return FloorWriter()

    return FloorSource


def floor_read_job(spark: SparkSession, records: int, size: int, partitions: int) -> None:
    (
        spark.read.format(FLOOR_FORMAT)
        .option("records", str(records))
        .option("size", str(size))
        .option("partitions", str(partitions))
        .load()
        .write.format("noop")
        .mode("overwrite")
        .save()
    )


def floor_write_job(frame: DataFrame) -> None:
    frame.write.format(FLOOR_FORMAT).mode("append").save()
