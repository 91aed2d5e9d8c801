"""Apache Kafka 4.4's own command-line tools (kafka-topics, kafka-configs,
kafka-client-metrics), run from the kafka-tools jar in tests/reference/lib as an
operator runs them, against either broker."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from helpers import reference_kafka
from helpers.reference_kafka import LIB

TOOLS = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
    "kafka-client-metrics": "org.apache.kafka.tools.ClientMetricsCommand",
}


@dataclass
class ToolRun:
    returncode: int
    stdout: str
    stderr: str

    def lines(self) -> list[str]:
        return [line for line in self.stdout.splitlines() if line.strip()]


def run(tool: str, bootstrap: str, args: Sequence[str], timeout: float = 60) -> ToolRun:
    """One tool's run to its end: what it printed and its exit status."""
    reference_kafka.require()
    done = subprocess.run(
        [
            "java",
            "-Xmx256m",
            "-Dlog4j2.rootLogger.level=OFF",
            "-cp",
            str(LIB / "*"),
            TOOLS[tool],
            "--bootstrap-server",
            bootstrap,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return ToolRun(done.returncode, done.stdout, done.stderr)
