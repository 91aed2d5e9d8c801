"""Reading topics back for the Spark tests, with librdkafka (not through Spark); a Spark
standalone cluster (a master and workers) to submit jobs to."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient

from helpers.broker import free_port


@dataclass(frozen=True)
class Record:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] | None
    timestamp: int
    timestamp_type: int  # 0 CreateTime, 1 LogAppendTime, as the Spark source reports it


def read_topic(
    bootstrap: str, topic: str, *, read_committed: bool = True, timeout: float = 30.0
) -> list[Record]:
    """Every record of ``topic`` up to its current end, ordered by partition and offset."""
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    partitions = sorted(metadata.topics[topic].partitions)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "odradek-tests-reader",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed" if read_committed else "read_uncommitted",
        }
    )
    records: list[Record] = []
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        pending = set(partitions)
        deadline = time.monotonic() + timeout
        while pending:
            assert time.monotonic() < deadline, f"reading {topic} timed out; left {pending}"
            for m in consumer.consume(500, timeout=0.5):
                error = m.error()
                if error is not None:
                    assert error.code() == KafkaError._PARTITION_EOF, error
                    pending.discard(m.partition())
                    continue
                kind, ts = m.timestamp()
                headers = cast("list[tuple[str, bytes | None]] | None", m.headers())
                records.append(
                    Record(
                        m.partition() or 0,
                        m.offset() or 0,
                        cast("bytes | None", m.key()),
                        cast("bytes | None", m.value()),
                        tuple(headers) if headers is not None else None,
                        ts,
                        1 if kind == 2 else 0,
                    )
                )
    finally:
        consumer.close()
    return sorted(records, key=lambda r: (r.partition, r.offset))


def records_from_rows(rows: list[object]) -> list[Record]:
    """Spark source rows (key, value, partition, offset, timestamp, headers ...) as Records."""
    out = []
    for row in rows:
        d = row.asDict(recursive=True)  # type: ignore[attr-defined]
        headers = d.get("headers")
        out.append(
            Record(
                d["partition"],
                d["offset"],
                d["key"],
                d["value"],
                tuple((h["key"], h["value"]) for h in headers) if headers is not None else None,
                int(d["timestamp"].timestamp() * 1000 + 0.5),
                d["timestampType"],
            )
        )
    return sorted(out, key=lambda r: (r.partition, r.offset))


# ------------------------------------------------------ Spark's own Kafka connector

KAFKA_CONNECTOR_LIB = Path(__file__).resolve().parents[1] / "spark" / "connector" / "lib"


def kafka_connector_jars() -> list[Path]:
    """The jars of Spark's own Kafka connector, format("kafka"), that `make install-test`
    copies (tests/spark/connector/pom.xml); empty when they are not there."""
    return sorted(KAFKA_CONNECTOR_LIB.glob("*.jar"))


# ---------------------------------------------------------------- a standalone cluster


def spark_home() -> Path:
    """The Spark distribution inside the pyspark wheel (bin/spark-class, bin/spark-submit)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def spark_env(**extra: str) -> dict[str, str]:
    """The environment for Spark's launch scripts: everything on 127.0.0.1, the wheel's
    Spark, and no settings from the user's own Spark configuration."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env.update(
        SPARK_HOME=str(spark_home()),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_DAEMON_MEMORY="512m",
        PYSPARK_PYTHON=sys.executable,
    )
    env.update(extra)
    return env


@dataclass
class StandaloneCluster:
    """A Spark standalone master and its workers, each a ``spark-class`` process (in a
    process group of its own, so stopping a worker takes its executors with it)."""

    base: Path
    master_port: int
    master_ui_port: int
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    def _spawn(self, name: str, *args: str) -> None:
        log = self.base / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=spark_env(SPARK_LOCAL_DIRS=str(self.base / "local")),
                start_new_session=True,
            )
        self.procs.append(proc)
        self.logs.append(log)

    def start_master(self) -> None:
        self._spawn(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.master_port),
            "--webui-port",
            str(self.master_ui_port),
        )

    def start_worker(self, index: int, *, cores: int, memory: str, ui_port: int) -> None:
        work = self.base / f"worker-{index}"
        work.mkdir(parents=True, exist_ok=True)
        self._spawn(
            f"worker-{index}",
            "org.apache.spark.deploy.worker.Worker",
            self.master_url,
            "--host",
            "127.0.0.1",
            "--cores",
            str(cores),
            "--memory",
            memory,
            "--webui-port",
            str(ui_port),
            "--work-dir",
            str(work),
        )

    def state(self) -> dict[str, Any] | None:
        """The master's status page as JSON, or None while it does not answer."""
        url = f"http://127.0.0.1:{self.master_ui_port}/json/"
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                return cast("dict[str, Any]", json.load(answer))
        except (OSError, ValueError):
            return None

    def wait_for_workers(self, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            dead = [p.args for p in self.procs if p.poll() is not None]
            if dead:
                raise RuntimeError(f"a Spark daemon exited: {dead}\n{self.log_tail()}")
            state = self.state()
            if state is not None and state.get("aliveworkers", 0) >= count:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{count} Spark worker(s) did not register with the master within "
                    f"{timeout:.0f} s (master state: {state})\n{self.log_tail()}"
                )
            time.sleep(0.5)

    def log_tail(self, chars: int = 4000) -> str:
        parts = []
        for log in self.logs:
            text = log.read_text(errors="replace") if log.exists() else ""
            parts.append(f"--- {log.name}\n{text[-chars:]}")
        return "\n".join(parts)

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)


def start_standalone_cluster(
    base: Path,
    *,
    workers: int = 1,
    cores: int = 1,
    memory: str = "1g",
    timeout: float = 120.0,
) -> StandaloneCluster:
    """A master and ``workers`` workers of ``cores`` cores each, registered and ready."""
    base.mkdir(parents=True, exist_ok=True)
    cluster = StandaloneCluster(base, free_port(), free_port())
    try:
        cluster.start_master()
        for index in range(workers):
            cluster.start_worker(index, cores=cores, memory=memory, ui_port=free_port())
        cluster.wait_for_workers(workers, timeout)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def spark_submit(
    cluster: StandaloneCluster,
    script: Path,
    *args: str,
    conf: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
    log: IO[str] | None = None,
    timeout: float = 240.0,
) -> subprocess.CompletedProcess[str]:
    """``spark-submit --master <the cluster> script args`` to completion (client deploy
    mode: the driver runs here), its Python workers on this interpreter."""
    settings = {"spark.pyspark.python": sys.executable, "spark.ui.enabled": "false", **(conf or {})}
    command = [str(spark_home() / "bin" / "spark-submit"), "--master", cluster.master_url]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    proc = subprocess.Popen(
        [*command, str(script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=spark_env(**(env or {})),
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        stderr += f"\nspark-submit killed after {timeout:.0f} s"
    except BaseException:  # the test's own timeout, say: leave no driver behind
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
        raise
    if log is not None:
        log.write(f"$ {' '.join(command)} {script} {' '.join(args)}\n{stdout}\n{stderr}\n")
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
