"""Odradek's Spark connector: a source and an exactly-once sink for Spark Structured
Streaming, on Spark 4's Python data source API.

    import odradek.spark
    odradek.spark.register(spark)
    spark.readStream.format("odradek").option("kafka.bootstrap.servers", ...)

Options and columns are those of Spark's Kafka connector. Spark's Python workers must
run the Python this package is installed in (``PYSPARK_PYTHON``); ``local_session``
sees to that for local runs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

FORMAT = "odradek"
# Spark's own Kafka connector, format("kafka"), for spark.jars.packages: the newest
# published (4.3.0 is not), which runs on Spark 4.3
KAFKA_CONNECTOR_PACKAGE = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"


def register(spark: SparkSession) -> None:
    """Make ``format("odradek")`` available in ``spark``."""
    from odradek.spark.datasource import OdradekDataSource

    spark.dataSource.register(OdradekDataSource)


def local_session(
    app_name: str = "odradek",
    *,
    master: str = "local[2]",
    shuffle_partitions: int = 2,
    config: Mapping[str, str] | None = None,
) -> SparkSession:
    """A local session (``local[2]``: two cores; ``local[2,4]``: and four attempts per
    task) whose Python workers run this interpreter, with few
    shuffle partitions (Spark's 200 make small jobs slow) and ``odradek`` registered.
    ``config`` adds Spark settings (e.g. ``spark.driver.memory``)."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
    )
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    register(spark)
    return spark


__all__ = ["FORMAT", "KAFKA_CONNECTOR_PACKAGE", "local_session", "register"]
