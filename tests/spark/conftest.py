"""One local SparkSession for the Spark tests in this process (Spark takes ~10 s to start),
with the ``odradek`` format registered and Spark's own Kafka connector (``kafka``) on
``spark.jars``. Tests that need their own Spark (fault injection,
killing the driver) run ``tests/spark/copy_job.py`` as a process of its own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from helpers.env import missing, require_module
from helpers.spark import KAFKA_CONNECTOR_LIB, kafka_connector_jars

require_module("pyspark")
require_module("pyarrow")


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    import odradek.spark as odradek_spark

    jars = ",".join(str(jar) for jar in kafka_connector_jars())
    config = {"spark.jars": jars} if jars else {}
    session = odradek_spark.local_session("odradek-tests", shuffle_partitions=2, config=config)
    yield session
    session.stop()


@pytest.fixture
def kafka_connector(spark: Any) -> Any:
    """The session, for tests of format("kafka"): its jars must be on spark.jars."""
    if not kafka_connector_jars():
        missing(
            f"Spark's Kafka connector jars are not in {KAFKA_CONNECTOR_LIB} (make install-test)"
        )
    return spark
