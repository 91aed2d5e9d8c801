"""``OdradekDataSource``: the ``odradek`` format, a Spark Python data source."""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from odradek.spark.options import (
    OptionError,
    boolean_option,
    parse_sink_options,
    parse_source_options,
)
from odradek.spark.schema import source_schema
from odradek.spark.sink import BatchWriter, KafkaSinkError, StreamWriter, check_sink_schema
from odradek.spark.source import BatchReader, StreamReader


class OdradekDataSource(DataSource):
    """Reads and writes Kafka topics with the options and columns of Spark's Kafka
    connector; writes are exactly once (see ``odradek.spark.sink``)."""

    @classmethod
    def name(cls) -> str:
        return "odradek"

    def schema(self) -> StructType:
        options = {str(k).lower(): str(v) for k, v in self.options.items()}
        return source_schema(boolean_option(options, "includeHeaders", False))

    def reader(self, schema: StructType) -> DataSourceReader:
        return BatchReader(parse_source_options(self.options, streaming=False), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return StreamReader(parse_source_options(self.options, streaming=True), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise OptionError("Save mode Overwrite is not allowed for Kafka; use Append")
        options = parse_sink_options(self.options)
        check_sink_schema(schema, options)
        return BatchWriter(options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        options = parse_sink_options(self.options)
        check_sink_schema(schema, options)
        return StreamWriter(options)


__all__ = ["KafkaSinkError", "OdradekDataSource"]
