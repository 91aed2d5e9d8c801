"""The example pipeline (``odradek_spark/examples/orders.py``) as the README runs it on a
cluster: ``spark-submit --master spark://...`` to a Spark standalone master with a worker
(started from the pyspark wheel's ``spark-class``), its driver in a time zone that is not
UTC, and the same command run a second time with the same checkpoint.

The module's fixture submits the example twice; each test checks one thing of those runs
(what read_committed consumers see in the output topic, the input topic, the checkpoint).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from subprocess import CompletedProcess

import pytest
from confluent_kafka.admin import AdminClient
from helpers.broker import REPO_ROOT, Broker
from helpers.env import require_executable
from helpers.names import unique_name
from helpers.spark import read_topic, spark_submit, start_standalone_cluster

from odradek.spark.examples.orders import expected_revenue, sample_orders

EXAMPLE = REPO_ROOT / "odradek_spark" / "examples" / "orders.py"
ORDERS = 1000
SEED = 7
DRIVER_TZ = "America/New_York"  # the window starts are 5 h off if formatted here
SHUFFLE_PARTITIONS = 2  # the example's default, as the README gives it
MATCH = "results match the same computation done in plain Python"

pytestmark = pytest.mark.timeout(480)


@dataclass
class Submitted:
    input_topic: str
    output_topic: str
    checkpoint: Path
    runs: list[CompletedProcess[str]]
    tables: list[dict[tuple[str, str], tuple[int, int]]]  # the output topic after each run
    log: Path

    def explain(self, run: int) -> str:
        proc = self.runs[run]
        return (
            f"run {run + 1} exited with {proc.returncode}\n--- stdout\n{proc.stdout[-3000:]}\n"
            f"--- stderr\n{proc.stderr[-1500:]}\n(all output and the cluster's logs: {self.log})"
        )


def results_table(bootstrap: str, topic: str) -> dict[tuple[str, str], tuple[int, int]]:
    """The last value per key of the output topic, read_committed, read here (not by the
    example's own check)."""
    table = {}
    for record in read_topic(bootstrap, topic, read_committed=True):
        row = json.loads(record.value or b"")
        table[(row["window_start"], row["category"])] = (row["orders"], row["revenue_cents"])
    return table


@pytest.fixture(scope="module")
def submitted(
    _session_broker: Broker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Submitted]:
    """The example submitted twice, to one master with one 1-core worker, with one
    checkpoint; the driver runs under ``TZ=America/New_York``."""
    require_executable("java", "Spark needs a JDK (make install-test installs one)")
    base = tmp_path_factory.mktemp("example-submit")
    bootstrap = _session_broker.bootstrap
    names = (unique_name("orders-submit"), unique_name("revenue-submit"))
    checkpoint = base / "checkpoint"
    log = base / "submit.log"
    cluster = start_standalone_cluster(base / "cluster", workers=1, cores=1, memory="1g")
    runs, tables = [], []
    try:
        with open(log, "w") as out:
            for _ in range(2):
                runs.append(
                    spark_submit(
                        cluster,
                        EXAMPLE,
                        *("--bootstrap", bootstrap, "--orders", str(ORDERS), "--seed", str(SEED)),
                        *("--input-topic", names[0], "--output-topic", names[1]),
                        *("--checkpoint", str(checkpoint)),
                        env={"TZ": DRIVER_TZ},
                        log=out,
                    )
                )
                tables.append(results_table(bootstrap, names[1]))
            out.write(cluster.log_tail(20000))
    finally:
        cluster.stop()
    yield Submitted(names[0], names[1], checkpoint, runs, tables, log)


def test_submit_with_driver_outside_utc_writes_utc_windows(
    submitted: Submitted, shared_broker: Broker
) -> None:
    """Item 7: the table's window starts are UTC whatever the driver's time zone; before,
    the session spark-submit made formatted them in the driver's (04:00 for 09:00)."""
    first = submitted.runs[0]
    starts = re.findall(r"^(2026-01-05 \d\d:\d\d:00) ", first.stdout, re.MULTILINE)
    assert starts, submitted.explain(0)
    assert min(starts) == "2026-01-05 08:59:00", submitted.explain(0)  # late orders of 09:00
    assert max(starts) == "2026-01-05 09:09:00", submitted.explain(0)
    assert submitted.tables[0] == expected_revenue(sample_orders(ORDERS, SEED))
    assert first.returncode == 0, submitted.explain(0)
    assert MATCH in first.stdout, submitted.explain(0)


def test_submit_rerun_with_the_same_checkpoint_matches_again(
    submitted: Submitted, shared_broker: Broker
) -> None:
    """Item 6: the same command run again finds the orders in the topic, produces none, and
    the query goes on from its checkpoint; before, it produced them a second time and
    every count doubled."""
    ids = [
        json.loads(r.value or b"")["order_id"]
        for r in read_topic(shared_broker.bootstrap, submitted.input_topic, read_committed=False)
    ]
    assert len(ids) == ORDERS, f"{len(ids)} orders in the input topic after two runs"
    assert len(set(ids)) == ORDERS
    second = submitted.runs[1]
    held = f"{submitted.input_topic!r} already holds the {ORDERS} sample orders"
    assert held in second.stdout, submitted.explain(1)
    assert submitted.tables[1] == expected_revenue(sample_orders(ORDERS, SEED))
    assert second.returncode == 0, submitted.explain(1)
    assert MATCH in second.stdout, submitted.explain(1)


def test_submit_uses_few_shuffle_partitions(submitted: Submitted, shared_broker: Broker) -> None:
    """Item 8: the query runs with the example's shuffle partitions, not Spark's 200: the
    checkpoint records them, the state has that many parts, and the sink used at most that
    many transactional ids (one marker group each)."""
    offsets = submitted.checkpoint / "offsets" / "0"
    assert offsets.exists(), submitted.explain(0)
    conf = json.loads(offsets.read_text().splitlines()[1])["conf"]
    assert conf["spark.sql.shuffle.partitions"] == str(SHUFFLE_PARTITIONS)
    state = submitted.checkpoint / "state" / "0"
    partitions = sorted(int(p.name) for p in state.iterdir() if p.name.isdigit())
    assert partitions == list(range(SHUFFLE_PARTITIONS))
    query_id = json.loads((submitted.checkpoint / "metadata").read_text())["id"]
    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    groups = admin.list_consumer_groups(request_timeout=30).result()
    markers = [g.group_id for g in groups.valid if f"-{query_id}-" in g.group_id]
    assert 1 <= len(markers) <= SHUFFLE_PARTITIONS, markers
