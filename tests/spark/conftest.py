"""One local SparkSession for the Spark tests in this process (Spark takes ~10 s to start),
with the ``odradek`` format registered. Tests that need their own Spark (fault injection,
killing the driver) run ``tests/spark/copy_job.py`` as a process of its own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from helpers.env import require_module

require_module("pyspark")
require_module("pyarrow")


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    import odradek.spark as odradek_spark

    session = odradek_spark.local_session("odradek-tests", shuffle_partitions=2)
    yield session
    session.stop()
