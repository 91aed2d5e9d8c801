"""The exactly-once sink under failures: task attempts that fail before or after their
transaction commits, the driver killed with -9 between a task's commit and Spark's
checkpoint, and the broker killed with -9 while the query runs. Each time, what
read_committed consumers see in the output topic equals the input: no gap, no duplicate.

Each test runs ``copy_job.py`` as a Spark driver of its own (a process group, so -9
takes the JVM and the Python workers with it)."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from helpers.broker import Broker, BrokerFactory
from helpers.spark import read_topic
from helpers.topics import create_topic

from odradek.spark.sink import FAIL_FIRST_ATTEMPT_ENV, PAUSE_AFTER_COMMIT_ENV

JOB = Path(__file__).with_name("copy_job.py")
JOB_TIMEOUT = 240.0


class Job:
    """One run of copy_job.py; its JSON event lines arrive on ``events``."""

    def __init__(
        self,
        bootstrap: str,
        source: str,
        sink: str,
        checkpoint: Path,
        *args: str,
        env: dict[str, str] | None = None,
        log: Path,
    ) -> None:
        self.log = log
        self.lines: list[dict[str, Any]] = []
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(JOB),
                "--bootstrap",
                bootstrap,
                "--input",
                source,
                "--output",
                sink,
                "--checkpoint",
                str(checkpoint),
                *args,
            ],
            stdout=subprocess.PIPE,
            stderr=open(log, "ab"),  # noqa: SIM115 - kept open for the process's life
            env={**os.environ, **(env or {})},
            start_new_session=True,
            text=True,
        )
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                event = json.loads(line)
                self.lines.append(event)
                self.events.put(event)

    def rows_reported(self) -> int:
        return sum(e["rows"] for e in self.lines if e["event"] == "progress")

    def wait(self, timeout: float = JOB_TIMEOUT) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"job did not finish in {timeout} s:\n{self.describe()}") from None

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)

    def describe(self) -> str:
        return f"events: {self.lines}\nlog tail:\n{self.log.read_text(errors='replace')[-5000:]}"


def fill(bootstrap: str, topic: str, start: int, count: int) -> list[bytes]:
    producer = Producer({"bootstrap.servers": bootstrap})
    values = [f"record-{i}".encode() for i in range(start, start + count)]
    for i, value in enumerate(values):
        producer.produce(topic, value, key=str(i).encode())
    assert producer.flush(30) == 0
    return values


def copy_topics(boot: str, name_factory: Any, records: int) -> tuple[str, str, list[bytes]]:
    """An input topic holding ``records`` records and an empty output topic."""
    source, sink = name_factory("in"), name_factory("out")
    create_topic(boot, source, partitions=2)
    create_topic(boot, sink, partitions=2)
    return source, sink, fill(boot, source, 0, records)


def output_values(bootstrap: str, topic: str) -> Counter[bytes | None]:
    return Counter(r.value for r in read_topic(bootstrap, topic))


def assert_exactly_once(bootstrap: str, topic: str, sent: list[bytes], job: Job) -> None:
    got = output_values(bootstrap, topic)
    duplicated = {v: n for v, n in got.items() if n > 1}
    missing = set(sent) - set(got)
    assert not duplicated and not missing and got == Counter(sent), (
        f"{len(duplicated)} duplicated, {len(missing)} missing, {sum(got.values())} read "
        f"of {len(sent)} sent\n{job.describe()}"
    )


@pytest.mark.parametrize("point", ["before-commit", "after-commit"])
def test_failed_task_attempts_write_once(
    shared_broker: Broker, name_factory: Any, tmp_path: Path, point: str
) -> None:
    boot = shared_broker.bootstrap
    source, sink, sent = copy_topics(boot, name_factory, 400)
    job = Job(
        boot,
        source,
        sink,
        tmp_path / "ck",
        "--max-offsets",
        "150",
        "--task-retries",
        "3",
        env={FAIL_FIRST_ATTEMPT_ENV: point},
        log=tmp_path / "job.log",
    )
    assert job.wait() == 0, job.describe()
    assert job.rows_reported() == 400, job.describe()
    assert_exactly_once(boot, sink, sent, job)
    assert "injected failure" in job.log.read_text(errors="replace"), "no attempt failed"


def test_driver_killed_between_commit_and_checkpoint(
    shared_broker: Broker, name_factory: Any, tmp_path: Path
) -> None:
    boot = shared_broker.bootstrap
    source, sink, sent = copy_topics(boot, name_factory, 500)
    checkpoint = tmp_path / "ck"
    job = Job(
        boot,
        source,
        sink,
        checkpoint,
        "--max-offsets",
        "100",
        "--interval-ms",
        "300",
        env={PAUSE_AFTER_COMMIT_ENV: "5"},
        log=tmp_path / "job1.log",
    )
    deadline = time.monotonic() + JOB_TIMEOUT
    killed_at: tuple[int, int] | None = None
    while killed_at is None:
        assert time.monotonic() < deadline, f"no batch became visible\n{job.describe()}"
        assert job.proc.poll() is None, f"job ended early\n{job.describe()}"
        visible = sum(output_values(boot, sink).values())
        reported = job.rows_reported()
        if visible > reported:  # a batch is in Kafka but Spark has not recorded it done
            job.kill()
            killed_at = (visible, reported)
        time.sleep(0.3)
    planned = {int(p.name) for p in (checkpoint / "offsets").iterdir() if p.name.isdigit()}
    done = {int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit()}
    assert max(planned) not in done, (planned, done)  # the killed batch will be replayed

    again = Job(boot, source, sink, checkpoint, "--max-offsets", "100", log=tmp_path / "job2.log")
    assert again.wait() == 0, again.describe()
    assert_exactly_once(boot, sink, sent, again)


def test_broker_killed_while_the_query_runs(
    broker_factory: BrokerFactory, name_factory: Any, tmp_path: Path
) -> None:
    broker = broker_factory()
    boot = broker.bootstrap
    source, sink, sent = copy_topics(boot, name_factory, 300)
    job = Job(
        boot,
        source,
        sink,
        tmp_path / "ck",
        "--max-offsets",
        "60",
        "--interval-ms",
        "300",
        "--restarts",
        "6",
        log=tmp_path / "job.log",
    )
    try:
        deadline = time.monotonic() + JOB_TIMEOUT
        while sum(output_values(boot, sink).values()) == 0:
            assert time.monotonic() < deadline, job.describe()
            assert job.proc.poll() is None, job.describe()
            time.sleep(0.2)
        broker.kill()
        time.sleep(3)
        broker.restart()
        sent += fill(boot, source, 300, 300)
        while sum(output_values(boot, sink).values()) < len(sent):
            assert time.monotonic() < deadline, job.describe()
            assert job.proc.poll() is None, job.describe()
            time.sleep(1)
        time.sleep(2)  # nothing more may arrive: a duplicate would show now
        assert_exactly_once(boot, sink, sent, job)
    finally:
        job.kill()
