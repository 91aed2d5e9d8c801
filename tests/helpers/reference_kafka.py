"""Apache Kafka 4.4, the reference broker, for the tests.

The broker itself (settings, JVM heap, storage format, start and stop) is
bench/reference_kafka.py's ReferenceKafka, which the benchmarks run too. Tests share
one per session (the `kafka44` fixture in conftest.py); `require()` skips a test
(fails it under CI) when Kafka's jars or a `java` are missing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from bench.reference_kafka import (
    HEAP,
    LIB,
    VERSION,
    ReferenceKafka,
    StartFigures,
    available,
)
from helpers.env import missing, require_executable

__all__ = [
    "HEAP",
    "LIB",
    "VERSION",
    "ReferenceKafka",
    "StartFigures",
    "available",
    "require",
    "telemetry_plugin",
]

PLUGIN = Path(__file__).resolve().parents[1] / "reference" / "plugin"
TELEMETRY_RECEIVER = "TelemetryReceiver"


def require() -> None:
    """Skip (fail under CI) when the reference broker is not installed."""
    require_executable("java")
    if not available():
        missing(f"Apache Kafka {VERSION} in {LIB} (run `make install-test`)")


def telemetry_plugin() -> tuple[str, dict[str, str]]:
    """The classpath entry and settings of a metrics reporter that receives the metrics
    clients push (tests/reference/plugin): with it, Kafka serves GetTelemetrySubscriptions
    and PushTelemetry. Compiled here when its source is newer than its class."""
    require_executable("javac")
    source = PLUGIN / f"{TELEMETRY_RECEIVER}.java"
    classes = PLUGIN / "classes"
    compiled = classes / f"{TELEMETRY_RECEIVER}.class"
    if not compiled.is_file() or compiled.stat().st_mtime < source.stat().st_mtime:
        classes.mkdir(exist_ok=True)
        subprocess.run(
            ["javac", "-cp", str(LIB / "*"), "-d", str(classes), str(source)],
            check=True,
            capture_output=True,
            timeout=120,
        )
    return str(classes), {"metric.reporters": TELEMETRY_RECEIVER}
