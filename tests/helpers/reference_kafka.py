"""Apache Kafka 4.4, the reference broker, for the tests.

The broker itself (settings, JVM heap, storage format, start and stop) is
bench/reference_kafka.py's ReferenceKafka, which the benchmarks run too. Tests share
one per session (the `kafka44` fixture in conftest.py); `require()` skips a test
(fails it under CI) when Kafka's jars or a `java` are missing.
"""

from __future__ import annotations

from bench.reference_kafka import (
    HEAP,
    LIB,
    VERSION,
    ReferenceKafka,
    StartFigures,
    available,
)
from helpers.env import missing, require_executable

__all__ = ["HEAP", "LIB", "VERSION", "ReferenceKafka", "StartFigures", "available", "require"]


def require() -> None:
    """Skip (fail under CI) when the reference broker is not installed."""
    require_executable("java")
    if not available():
        missing(f"Apache Kafka {VERSION} in {LIB} (run `make install-test`)")
