"""The example pipeline (``make pipeline``) runs end to end and its results check out."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from helpers.broker import Broker


def test_orders_pipeline_matches_plain_python(
    shared_broker: Broker, name_factory: Callable[[str], str], tmp_path: Path
) -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "odradek_spark.examples.orders",
            "--bootstrap",
            shared_broker.bootstrap,
            "--orders",
            "3000",
            "--input-topic",
            name_factory("orders"),
            "--output-topic",
            name_factory("revenue"),
            "--checkpoint",
            str(tmp_path / "ck"),
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "results match the same computation done in plain Python" in run.stdout
    assert "3000 orders in, 44 result rows out" in run.stdout
