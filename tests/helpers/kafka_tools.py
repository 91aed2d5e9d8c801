"""Apache Kafka 4.4's own command-line tools (org.apache.kafka:kafka-tools, copied into
tests/reference/lib by `make install-test`), run as an operator runs them, against
either broker."""

from __future__ import annotations

import subprocess

from helpers import reference_kafka

TIMEOUT = 60.0


def run_tool(main_class: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`java <main_class> args...` on Kafka's class path: its exit status and output."""
    reference_kafka.require()
    return subprocess.run(
        [
            "java",
            "-Xshare:auto",
            # a short-lived tool: the quick compiler and the serial collector start faster
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            "-cp",
            str(reference_kafka.LIB / "*"),
            main_class,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def features(*args: str) -> subprocess.CompletedProcess[str]:
    """kafka-features.sh"""
    return run_tool("org.apache.kafka.tools.FeatureCommand", *args)


def configs(*args: str) -> subprocess.CompletedProcess[str]:
    """kafka-configs.sh"""
    return run_tool("org.apache.kafka.tools.ConfigCommand", *args)
