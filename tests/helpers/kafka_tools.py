"""Apache Kafka 4.4's own command-line tools (org.apache.kafka:kafka-tools, copied into
tests/reference/lib by `make install-test`), run as an operator runs them, against
either broker."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from helpers import reference_kafka

TOOLS = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
    "kafka-client-metrics": "org.apache.kafka.tools.ClientMetricsCommand",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-delegation-tokens": "org.apache.kafka.tools.DelegationTokenCommand",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
}
TIMEOUT = 60.0


@dataclass
class ToolRun:
    returncode: int
    stdout: str
    stderr: str

    def lines(self) -> list[str]:
        return [line for line in self.stdout.splitlines() if line.strip()]


def run_tool(main_class: str, *args: str, timeout: float = TIMEOUT) -> ToolRun:
    """`java <main_class> args...` on Kafka's class path: its exit status and output."""
    reference_kafka.require()
    done = subprocess.run(
        [
            "java",
            "-Xmx256m",
            # a short-lived tool: the quick compiler and the serial collector start faster
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            "-Dlog4j2.rootLogger.level=OFF",
            "-cp",
            str(reference_kafka.LIB / "*"),
            main_class,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return ToolRun(done.returncode, done.stdout, done.stderr)


def run(tool: str, bootstrap: str, args: Sequence[str], timeout: float = TIMEOUT) -> ToolRun:
    """One tool (by its script's name) against `bootstrap`, to its end."""
    return run_tool(TOOLS[tool], "--bootstrap-server", bootstrap, *args, timeout=timeout)


def features(*args: str) -> ToolRun:
    """kafka-features.sh"""
    return run_tool(TOOLS["kafka-features"], *args)


def configs(*args: str) -> ToolRun:
    """kafka-configs.sh"""
    return run_tool(TOOLS["kafka-configs"], *args)
